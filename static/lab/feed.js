// The operator's feed (live/feed.py): every live run's state reaches every page as a JSON
// frame on the page's socket. The tab title and the favicon count the runs that wait; an
// opted-in browser notification says which run asks or has finished a long turn, and a click
// on it opens that run at its dialog. Permission is asked only by the operator's click.
"use strict";

(function () {
  const WAITING = ["needs_input", "question"];
  const runs = new Map(); // run id -> the feed's entry
  const baseTitle = document.title;
  const OPT_IN = "lab.notify"; // localStorage: "on" once the operator turned notifications on

  function waitingCount() {
    let n = 0;
    runs.forEach(function (run) { if (WAITING.indexOf(run.state) >= 0) n += 1; });
    return n;
  }

  function favicon(count) {
    const link = document.getElementById("favicon");
    if (!link) return;
    if (!count) { link.href = "data:,"; return; }
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 32;
    const ctx = canvas.getContext("2d");
    if (!ctx) return;
    ctx.fillStyle = "#14181d"; ctx.fillRect(0, 0, 32, 32);
    ctx.fillStyle = "#c0392b"; ctx.beginPath(); ctx.arc(16, 16, 15, 0, 2 * Math.PI); ctx.fill();
    ctx.fillStyle = "#fff"; ctx.font = "bold 20px sans-serif"; ctx.textAlign = "center"; ctx.textBaseline = "middle";
    ctx.fillText(count > 9 ? "9+" : String(count), 16, 17);
    link.href = canvas.toDataURL("image/png");
  }

  function showCount() {
    const n = waitingCount();
    document.title = n ? "(" + n + ") " + baseTitle : baseTitle;
    document.documentElement.dataset.waiting = String(n);
    favicon(n);
  }

  function enabled() {
    return "Notification" in window && Notification.permission === "granted" && localStorage.getItem(OPT_IN) === "on";
  }

  function lookingAt(run) {
    // This very run's page, in front of the operator: the page itself shows the change.
    return document.visibilityState === "visible" && location.pathname === run.url && document.hasFocus();
  }

  const SAID = {
    question: function (run) { return run.name + " asks" + (run.waiting ? ": " + run.waiting : ""); },
    needs_input: function (run) { return run.name + " waits for your input" + (run.waiting ? ": " + run.waiting : ""); },
    finished: function (run) { return run.name + " finished its turn"; },
    limit: function (run) { return run.name + ": " + (run.waiting || "a usage limit stopped its turn"); },
  };

  function notify(kind, run) {
    if (!SAID[kind] || !enabled() || lookingAt(run)) return;
    const target = run.url + (kind === "finished" || kind === "limit" ? "" : "#dialog");
    // One notification per run and kind: several open tabs, and a Web Push for the same change
    // (templates/push/sw.js), replace each other's.
    const options = { tag: "lab-run-" + run.id + "-" + kind, body: run.waiting || "", data: { target: target } };
    const open = function () { window.focus(); location.assign(target); };
    if (window.labPush) { window.labPush.show("lab: " + SAID[kind](run), options, open); return; }
    const n = new Notification("lab: " + SAID[kind](run), options);
    n.onclick = function () { n.close(); open(); };
  }

  // A turn ended: what shows its results refreshes (the run's changes view).
  function turnEnded(run) {
    document.querySelectorAll('[data-refresh-on-turn="' + run.id + '"]').forEach(function (el) {
      if (window.htmx) window.htmx.trigger(el, "turn-ended");
    });
  }

  // The runs list has one writer, its own view (templates/runs/list.html). When the feed says
  // runs changed, the page asks it for those rows alone (`?rows=`, each swapped in place by its
  // id), or for the whole list when one of them has no row here yet (a new run takes its place
  // in the order). On a snapshot (the socket (re)opened: a page woken from sleep) only the rows
  // that are missing or show another state are asked for. One request at a time: what changes
  // meanwhile is gathered and asked for next, so an older answer never lands after a newer one.
  let wanted = null; // null, "all", or a Set of run ids
  let asking = false;
  function behind(run) {
    const badge = document.getElementById("run-state-" + run.id);
    if (!badge) return run.state !== "ended";
    return badge.textContent.trim() !== run.state;
  }
  function ask(entries, onlyBehind) {
    const slot = document.getElementById("runs-list-slot");
    if (!slot) return;
    entries.forEach(function (run) {
      if (onlyBehind && !behind(run)) return;
      if (!document.getElementById("run-row-" + run.id)) {
        if (run.state !== "ended") wanted = "all";
        return;
      }
      if (wanted === "all") return;
      wanted = wanted || new Set();
      wanted.add(run.id);
    });
    if (!asking) askNow();
  }
  function askNow() {
    const slot = document.getElementById("runs-list-slot");
    if (!wanted || !slot || !window.htmx) return;
    const these = wanted;
    wanted = null;
    asking = true;
    const url = slot.dataset.list;
    const sent = these === "all"
      ? window.htmx.ajax("GET", url, { source: slot, target: slot, swap: "innerHTML ignoreTitle:true" })
      : window.htmx.ajax("GET", url + "?rows=" + Array.from(these).join(","), { source: slot, swap: "none" });
    const next = function () { asking = false; askNow(); };
    sent.then(next, next);
  }

  function receive(feed) {
    if (feed.snapshot) runs.clear();
    feed.runs.forEach(function (run) {
      const before = runs.get(run.id);
      if (run.state === "ended") runs.delete(run.id); else runs.set(run.id, run);
      if (!feed.snapshot && before && before.state === "working" && run.state !== "working") turnEnded(run);
    });
    showCount();
    let entries = feed.runs;
    if (feed.snapshot) {
      // A snapshot lists live runs only: a row still showing a live state whose run is not in
      // it ended while the page slept, and is asked for too.
      const live = new Set(feed.runs.map(function (run) { return "run-state-" + run.id; }));
      document.querySelectorAll('[id^="run-state-"]').forEach(function (badge) {
        if (!live.has(badge.id) && badge.textContent.trim() !== "ended") {
          entries = entries.concat([{ id: Number(badge.id.slice(10)), state: "ended" }]);
        }
      });
    }
    ask(entries, feed.snapshot);
    if (feed.notify && feed.runs.length === 1) notify(feed.notify, feed.runs[0]);
  }

  // Each (re)open asks for the whole feed: a page woken from sleep starts from the present.
  document.addEventListener("htmx:wsOpen", function (evt) {
    evt.detail.socketWrapper.send(JSON.stringify({ type: "feed" }));
  });

  document.addEventListener("htmx:wsBeforeMessage", function (evt) {
    const text = evt.detail.message;
    if (typeof text !== "string" || text.lastIndexOf('{"feed"', 0) !== 0) return;
    evt.preventDefault(); // not HTML: nothing for htmx-ws to swap
    try { receive(JSON.parse(text).feed); } catch (e) { /* a malformed frame changes nothing */ }
  });

  // --- the opt-in ----------------------------------------------------------------------------
  function syncToggle() {
    const btn = document.getElementById("notify-toggle");
    if (!btn) return;
    if (!("Notification" in window) || Notification.permission === "denied") {
      btn.hidden = true;
      return;
    }
    btn.hidden = false;
    const on = enabled();
    btn.textContent = on ? "Notifications on" : "Notify me";
    btn.setAttribute("aria-pressed", on ? "true" : "false");
  }
  document.addEventListener("click", function (evt) {
    const btn = evt.target instanceof Element ? evt.target.closest("#notify-toggle") : null;
    if (!btn) return;
    if (enabled()) {
      localStorage.setItem(OPT_IN, "off");
      syncToggle();
      if (window.labPush) window.labPush.off();
      return;
    }
    localStorage.setItem(OPT_IN, "on");
    // The same click subscribes this browser to Web Push (static/lab/push.js) once allowed.
    Notification.requestPermission().then(function () {
      syncToggle();
      if (enabled() && window.labPush) window.labPush.on();
    }, syncToggle);
  });
  document.addEventListener("DOMContentLoaded", syncToggle);
})();
