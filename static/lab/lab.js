// lab's page behaviour. No inline scripts (the CSP forbids them); htmx does the requests.
"use strict";

(function () {
  // --- live transcript: say what we have when the socket (re)opens --------------------------
  document.addEventListener("htmx:wsOpen", function (evt) {
    const cursor = document.getElementById("cursor");
    if (!cursor) return;
    evt.detail.socketWrapper.send(
      JSON.stringify({ type: "hello", epoch: cursor.dataset.epoch || "", seq: Number(cursor.dataset.seq || -1) })
    );
  });

  // Keep the newest message in view when the operator is already at the bottom.
  let stick = true;
  window.addEventListener("scroll", function () {
    stick = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    if (stick) window.scrollTo(0, document.body.scrollHeight);
    syncComposer();
  });

  // --- "Working for 42 s": the turn's start comes from the transcript; the page counts on --
  function elapsedText(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + " s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + " min " + (s % 60) + " s";
    return Math.floor(m / 60) + " h " + (m % 60) + " min";
  }
  function tickElapsed() {
    document.querySelectorAll("time.elapsed[datetime]").forEach(function (el) {
      const start = Date.parse(el.getAttribute("datetime"));
      if (!isNaN(start)) el.textContent = elapsedText(Date.now() - start);
    });
  }
  setInterval(tickElapsed, 1000);
  document.addEventListener("DOMContentLoaded", tickElapsed);
  document.addEventListener("htmx:wsAfterMessage", tickElapsed);

  function syncComposer() {
    const panel = document.getElementById("panel");
    const composer = document.getElementById("composer");
    if (!panel || !composer) return;
    const ended = panel.dataset.state === "ended";
    composer.querySelectorAll("textarea, button").forEach(function (el) { el.disabled = ended; });
  }

  // On a phone the on-screen keyboard takes half the screen: keep the composer in view.
  document.addEventListener("focusin", function (evt) {
    const box = evt.target;
    if (!(box instanceof HTMLTextAreaElement) || !box.closest("#composer")) return;
    if (window.visualViewport) {
      window.visualViewport.addEventListener("resize", function () { box.scrollIntoView({ block: "nearest" }); }, { once: true });
    }
  });

  // --- composer: Enter sends, Shift+Enter is a newline --------------------------------------
  document.addEventListener("keydown", function (evt) {
    const box = evt.target;
    if (!(box instanceof HTMLTextAreaElement) || !box.closest("#composer")) return;
    if (window.labCommands && window.labCommands.handleKey(evt, box)) return;
    if (evt.key === "Enter" && !evt.shiftKey && !evt.isComposing) {
      evt.preventDefault();
      if (box.value.trim()) box.form.requestSubmit();
    }
  });

  // The composer keeps focus across its own re-render (success clears it, failure keeps text).
  document.addEventListener("htmx:afterSwap", function (evt) {
    if (evt.detail.target && evt.detail.target.id === "composer") {
      const box = document.querySelector("#composer textarea");
      if (box) { box.focus(); box.setSelectionRange(box.value.length, box.value.length); }
    }
  });
  // --- copy buttons: the one handler for every page -----------------------------------------
  // data-copy holds the text; a code block's button copies its block (without its own label).
  // The Clipboard API needs a secure context (https or localhost): elsewhere, or when it is
  // refused, the text is selected for Ctrl-C (the element showing it, else a field added beside
  // the button) and the button says so; it never says "Copied" for a copy that did not happen.
  function copiedText(btn) {
    if (btn.dataset.copy !== undefined) return btn.dataset.copy;
    const pre = btn.closest("pre");
    if (!pre) return "";
    const clone = pre.cloneNode(true);
    clone.querySelectorAll(".copy-code").forEach(function (b) { b.remove(); });
    return clone.textContent;
  }
  function shownIn(btn, text) {
    const pre = btn.closest("pre");
    if (pre) return pre.querySelector("code") || pre;
    // The element beside the button (or in its block) that shows exactly this text.
    for (let box = btn.parentElement, up = 0; box && up < 3; box = box.parentElement, up += 1) {
      const found = Array.from(box.querySelectorAll("code")).find(function (el) { return el.textContent.trim() === text; });
      if (found) return found;
    }
    return null;
  }
  function selectForCtrlC(btn, text) {
    let el = shownIn(btn, text);
    if (!el) {
      el = btn.parentElement.querySelector("input.copy-fallback");
      if (!el) {
        el = document.createElement("input");
        el.className = "copy-fallback"; el.readOnly = true; el.setAttribute("aria-label", "Text to copy");
        btn.after(el);
      }
      el.value = text;
      el.select();
      return;
    }
    window.getSelection().selectAllChildren(el);
  }
  function say(btn, text, ms) {
    if (!btn.dataset.label) btn.dataset.label = btn.textContent;
    btn.textContent = text;
    clearTimeout(btn.labelTimer);
    btn.labelTimer = setTimeout(function () { btn.textContent = btn.dataset.label; }, ms);
  }
  document.addEventListener("click", function (evt) {
    const btn = evt.target instanceof Element ? evt.target.closest("[data-copy], .copy-code") : null;
    if (!btn) return;
    const text = copiedText(btn);
    const copy = navigator.clipboard && window.isSecureContext ? navigator.clipboard.writeText(text) : Promise.reject();
    copy.then(
      function () { say(btn, "Copied", 1200); },
      function () { selectForCtrlC(btn, text); say(btn, "Press Ctrl-C to copy", 6000); }
    );
  });

  // Code blocks get a copy button (added here, so the sanitized HTML stays button-free).
  function addCopyButtons(root) {
    root.querySelectorAll(".md pre").forEach(function (pre) {
      if (pre.querySelector(".copy-code")) return;
      const b = document.createElement("button"); b.type = "button"; b.className = "copy-code"; b.textContent = "Copy";
      pre.appendChild(b);
    });
  }
  document.addEventListener("htmx:load", function (evt) { addCopyButtons(evt.detail.elt); });
  document.addEventListener("DOMContentLoaded", function () { addCopyButtons(document); syncComposer(); });
})();

// New-run form: show only the chosen provider's declared options.
(function () {
  function sync() {
    const select = document.querySelector("select[name=provider]");
    if (!select) return;
    document.querySelectorAll("fieldset.provider-options").forEach(function (fs) {
      const on = fs.dataset.provider === select.value;
      fs.hidden = !on;
      fs.querySelectorAll("input, select, textarea").forEach(function (el) { el.disabled = !on; });
    });
  }
  document.addEventListener("change", function (evt) {
    if (evt.target instanceof HTMLSelectElement && evt.target.name === "provider") sync();
  });
  document.addEventListener("DOMContentLoaded", sync);
})();
