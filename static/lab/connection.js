// The page's link to lab: keep the live socket open, say when it is not, and say why a send
// failed. No inline scripts (the CSP forbids them).
"use strict";

(function () {
  // --- the live socket ---------------------------------------------------------------------
  // htmx-ws reconnects by itself only after 1006/1011/1012/1013. A normal close (1000, 1001:
  // a proxy's idle timeout, lab restarting, a laptop waking from sleep) left the page silently
  // stale: every close but "logged out" and "no such run" is reconnected here, with backoff.
  const HTMX_RETRIES = [1006, 1011, 1012, 1013];
  const CLOSE_UNAUTHENTICATED = 4401;
  const CLOSE_NOT_FOUND = 4404;
  const CLOSE_HOST_SILENT = 4503;
  let retries = 0;
  let leaving = false;
  window.addEventListener("pagehide", function () { leaving = true; });
  window.addEventListener("pageshow", function () { leaving = false; });

  function connection(text, link) {
    const el = document.getElementById("connection");
    if (!el) return;
    el.textContent = text || "";
    if (link) {
      const a = document.createElement("a");
      a.href = link.href; a.textContent = link.text;
      el.append(" ", a);
    }
    el.hidden = !text;
  }

  document.addEventListener("htmx:wsOpen", function () { retries = 0; connection(""); });
  document.addEventListener("htmx:wsClose", function (evt) {
    const source = evt.target;
    const code = evt.detail.event.code;
    if (leaving || !(source instanceof Element) || !source.isConnected) return;
    if (code === CLOSE_UNAUTHENTICATED) {
      const next = encodeURIComponent(location.pathname + location.search);
      connection("Disconnected: you are logged out.", { href: "/login/?next=" + next, text: "Log in again" });
      return;
    }
    if (code === CLOSE_NOT_FOUND) { connection("Disconnected: this run no longer exists."); return; }
    if (code === CLOSE_HOST_SILENT) {
      // The run's machine stopped answering: the reason is the server's true sentence.
      // The server's true sentence came as a fragment just before the close (daphne sends no
      // close reason).
      const said = document.getElementById("host-silence");
      connection("Disconnected: " + ((said && said.textContent) || "the run's host is not answering") + " — reconnecting…");
    } else {
      connection(navigator.onLine === false ? "Disconnected (offline) — reconnecting…" : "Disconnected — reconnecting…");
    }
    if (HTMX_RETRIES.indexOf(code) >= 0) return; // htmx-ws has scheduled this one itself
    const delay = Math.min(30000, 500 * Math.pow(2, retries)) * (0.5 + Math.random() / 2);
    retries += 1;
    const wrapper = evt.detail.socketWrapper;
    setTimeout(function () { if (source.isConnected && !leaving) wrapper.reconnect(); }, delay);
  });

  // --- fragments for elements this page has ------------------------------------------------
  // Every page's socket hears every run's row and every provider's card, and the run page's
  // socket pushes its own; a fragment whose target this page lacks (#run-row-7 outside the runs
  // list, #auth-card-x outside the Providers page) is dropped here: htmx would log
  // htmx:oobErrorNoTarget for each. The socket elements name this extension beside "ws".
  function target(el) {
    const how = el.getAttribute("hx-swap-oob");
    const colon = how.indexOf(":");
    if (colon >= 0) return how.slice(colon + 1).trim();
    return el.id ? "#" + CSS.escape(el.id) : "";
  }
  function present(selector) {
    try { return document.querySelector(selector) !== null; } catch (e) { return true; } // htmx says why
  }
  if (window.htmx) {
    window.htmx.defineExtension("lab-present", {
      transformResponse: function (text) {
        if (typeof text !== "string" || text.indexOf("hx-swap-oob") < 0) return text;
        const tpl = document.createElement("template");
        tpl.innerHTML = text; // a <template> keeps a top-level <tr> as it is
        let dropped = false;
        const host = document.body.dataset.host;
        Array.from(tpl.content.children).forEach(function (el) {
          if (!el.hasAttribute("hx-swap-oob")) return;
          // Another machine's provider card (several machines): this page shows this host's.
          if (el.dataset.host && host && el.dataset.host !== host) { el.remove(); dropped = true; return; }
          const selector = target(el);
          if (selector && !present(selector)) { el.remove(); dropped = true; }
        });
        return dropped ? tpl.innerHTML : text;
      },
    });
  }

  // --- waking from sleep ----------------------------------------------------------------------
  // A phone or a laptop that slept keeps a socket the browser still calls open while the
  // server has long dropped it: no close event ever comes. After a long hidden spell, a
  // clock jump (the timer did not run) or the network coming back, each socket is closed
  // here (4000, lab's own code) and the close handler above reconnects it; the run page's
  // hello and the feed request then catch the page up.
  const WAKE_AFTER_MS = 30000;
  const TICK_MS = 5000;
  const CLOSE_WOKE = 4000;
  const sockets = new Map(); // the ws-connect element -> its WebSocket (the open event's target)
  document.addEventListener("htmx:wsOpen", function (evt) {
    const ws = evt.detail.event && evt.detail.event.target;
    if (evt.target instanceof Element && ws instanceof WebSocket) sockets.set(evt.target, ws);
  });
  function wake() {
    sockets.forEach(function (ws, elt) {
      if (!elt.isConnected) { sockets.delete(elt); return; }
      // Not the wrapper's reconnect(): it would close this socket itself, and this close's
      // handler would then close the new one.
      if (ws.readyState === WebSocket.OPEN) ws.close(CLOSE_WOKE, "woke");
    });
  }
  let hiddenAt = 0;
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") { hiddenAt = Date.now(); return; }
    if (hiddenAt && Date.now() - hiddenAt > WAKE_AFTER_MS) wake();
    hiddenAt = 0;
  });
  window.addEventListener("online", wake);
  window.addEventListener("pageshow", function (evt) { if (evt.persisted) wake(); });
  let lastTick = Date.now();
  setInterval(function () {
    const now = Date.now();
    if (now - lastTick > TICK_MS + WAKE_AFTER_MS) wake();
    lastTick = now;
  }, TICK_MS);

  // --- sends -------------------------------------------------------------------------------
  // A request that failed without an answer lab could show in place (the network is down,
  // lab is down, a proxy's error page, a 5xx) says so, with its real cause; an older error
  // from another send does not stay on screen beside it.
  function sendError(evt, text) {
    const elt = evt.detail.elt;
    const form = elt && elt.closest ? elt.closest("form") || elt : null;
    if (form && form.querySelectorAll) form.querySelectorAll(".error").forEach(function (e) { e.remove(); });
    const el = document.getElementById("send-error");
    if (!el) return;
    el.textContent = text;
    el.hidden = false;
  }

  function firstLine(html) {
    const doc = new DOMParser().parseFromString(html || "", "text/html");
    const text = (doc.body ? doc.body.textContent : "").replace(/\s+/g, " ").trim();
    return text.length > 200 ? text.slice(0, 200) + "…" : text;
  }

  // Which error answers are swapped in place is the page's htmx-config (responseHandling: the
  // statuses lab answers a refusal with) and the server's choice of swap (HX-Reswap, which every
  // view sets on an answer that says in place what went wrong). The same status without that
  // header is not lab's answer for this element (a proxy's 502 page, Django's 400): it would
  // replace the form and the draft, so it is reported below instead.
  document.addEventListener("htmx:beforeSwap", function (evt) {
    const xhr = evt.detail.xhr;
    if (!xhr || xhr.status < 400 || !evt.detail.shouldSwap || xhr.getResponseHeader("HX-Reswap")) return;
    evt.detail.shouldSwap = false;
    evt.detail.isError = true;
  });

  document.addEventListener("htmx:sendError", function (evt) {
    // No answer is not "not sent": the request may have arrived before the connection failed.
    sendError(evt, "No answer from lab: the network is down or lab is not running. If the request arrived, the page will show it; otherwise try again (nothing on this page was cleared).");
  });
  document.addEventListener("htmx:responseError", function (evt) {
    const xhr = evt.detail.xhr;
    const detail = firstLine(xhr.responseText);
    sendError(evt, "lab answered " + xhr.status + (xhr.statusText ? " " + xhr.statusText : "") + (detail ? ": " + detail : "."));
  });
  document.addEventListener("htmx:afterRequest", function (evt) {
    if (!evt.detail.successful) return;
    const el = document.getElementById("send-error");
    if (el) { el.hidden = true; el.textContent = ""; }
  });
})();
