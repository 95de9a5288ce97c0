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
  // "Reject with feedback" needs the feedback: say so before a round trip.
  document.addEventListener("click", function (evt) {
    const btn = evt.target instanceof Element ? evt.target.closest(".dialog button.needs-feedback") : null;
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
