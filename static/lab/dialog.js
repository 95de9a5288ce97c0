// Dialog forms (templates/runs/dialog.html). No inline scripts: the CSP forbids them.
"use strict";

(function () {
  // A single-select question takes an option *or* a typed answer: typing clears the radios,
  // choosing an option clears the text (the server refuses both with 422).
  document.addEventListener("input", function (evt) {
    const box = evt.target;
    if (!(box instanceof HTMLInputElement) || !box.dataset.clears || !box.closest(".dialog")) return;
    if (!box.value) return;
    box.form.querySelectorAll('input[type="radio"][name="' + box.dataset.clears + '"]').forEach(function (r) {
      r.checked = false;
    });
  });
  document.addEventListener("change", function (evt) {
    const radio = evt.target;
    if (!(radio instanceof HTMLInputElement) || radio.type !== "radio" || !radio.closest(".dialog")) return;
    const text = radio.form.querySelector('input[data-clears="' + radio.name + '"]');
    if (text) text.value = "";
  });
  // --- a dialog arrives: say so, and bring the keyboard to it -------------------------------
  // Pushes replace the whole panel, so "new" is a dialog whose tool_use_id this page has not
  // announced yet. Focus moves only when the composer is empty: a half-typed reply keeps it.
  let announced = "";
  function dialogArrived() {
    const form = document.querySelector("#dialog form.dialog");
    const id = form ? form.dataset.toolUseId || "" : "";
    if (!form) { announced = ""; return; }
    if (id === announced) return;
    announced = id;
    const heading = document.getElementById("dialog-heading");
    const live = document.getElementById("dialog-announce");
    if (live && heading) {
      const prompt = form.querySelector(".prompt, legend");
      live.textContent = heading.textContent.trim() + (prompt ? ": " + prompt.textContent.replace(/\s+/g, " ").trim() : "");
    }
    const composer = document.getElementById("composer");
    if (composer && composer.classList.contains("htmx-request")) {
      // The reply that led here is still being sent (its text is still in the box): decide
      // once its answer has replaced the composer.
      focusAfterSend = id;
      return;
    }
    focusDialog();
  }
  let focusAfterSend = "";
  function focusDialog() {
    const heading = document.getElementById("dialog-heading");
    const box = document.querySelector("#composer textarea");
    const active = document.activeElement;
    const typing = active instanceof HTMLInputElement || active instanceof HTMLSelectElement;
    if (heading && !typing && (!box || !box.value)) heading.focus();
  }
  document.addEventListener("htmx:afterSettle", function () {
    if (!focusAfterSend) return;
    const form = document.querySelector("#dialog form.dialog");
    const composer = document.getElementById("composer");
    if (composer && composer.classList.contains("htmx-request")) return;
    const pending = form && form.dataset.toolUseId === focusAfterSend;
    focusAfterSend = "";
    if (pending) focusDialog();
  });
  document.addEventListener("DOMContentLoaded", function () {
    // A dialog already on the page when it opens is not news: it is not announced again.
    const form = document.querySelector("#dialog form.dialog");
    announced = form ? form.dataset.toolUseId || "" : "";
  });
  document.addEventListener("htmx:wsAfterMessage", dialogArrived);

  // --- "Answer sent" lasts as long as the turn it went to ----------------------------------
  // Cleared in place (the answer's response targets this very element, so it is never
  // replaced): when the panel turns idle or ended, or a moment after landing when the turn
  // had already ended (a fast turn's push can come before the answer's own response).
  const SETTLED = ["idle", "ended"];
  const LINGER_MS = 4000;
  let lastState = "";
  function panelState() {
    const panel = document.getElementById("panel");
    return panel ? panel.dataset.state || "" : "";
  }
  function clearNote(only) {
    const note = document.getElementById("dialog-note");
    if (note && note.querySelector(".dialog-answered") && (!only || note.firstElementChild === only)) note.replaceChildren();
  }
  document.addEventListener("htmx:wsAfterMessage", function () {
    const state = panelState();
    if (state !== lastState && SETTLED.indexOf(state) >= 0) clearNote(null);
    lastState = state;
  });
  document.addEventListener("DOMContentLoaded", function () { lastState = panelState(); });

  // --- answered: the keyboard goes back to the composer ----------------------------------
  // The answer's form is gone (its note replaced it, or the push did): focus would fall to
  // <body>, and a keyboard user would start again from the top of the page.
  document.addEventListener("htmx:afterSwap", function (evt) {
    if (!(evt.target instanceof Element) || evt.target.id !== "dialog-note") return;
    const answered = evt.target.querySelector(".dialog-answered");
    if (!answered) return;
    if (SETTLED.indexOf(panelState()) >= 0) {
      const shown = evt.target.firstElementChild;
      setTimeout(function () { if (SETTLED.indexOf(panelState()) >= 0) clearNote(shown); }, LINGER_MS);
    }
    const active = document.activeElement;
    if (active && active !== document.body && active.isConnected && !active.closest("#dialog")) return;
    const box = document.querySelector("#composer textarea");
    if (box && !box.disabled) box.focus();
  });

  // Enter in a feedback field sends that feedback's own button, not the form's first one (an
  // approval): a browser's implicit submit takes the first submit button in the form.
  document.addEventListener("keydown", function (evt) {
    const field = evt.target;
    if (evt.key !== "Enter" || !(field instanceof HTMLInputElement) || field.name !== "answers-0-text") return;
    const btn = field.form ? field.form.querySelector("button.needs-feedback") : null;
    if (!btn || !field.closest(".dialog")) return;
    evt.preventDefault();
    btn.click();
  });
  // An option the adapter refuses without text (Option.needs_text) asks for it before a
  // round trip; one whose text is optional goes as it is.
  document.addEventListener("click", function (evt) {
    const btn = evt.target instanceof Element ? evt.target.closest(".dialog button[data-needs-text]") : null;
    if (!btn) return;
    const field = btn.form.querySelector('input[name="answers-0-text"]');
    if (field && !field.value.trim()) {
      evt.preventDefault();
      field.setCustomValidity("Write the feedback first.");
      field.reportValidity();
      field.addEventListener("input", function () { field.setCustomValidity(""); }, { once: true });
    }
  });
})();
