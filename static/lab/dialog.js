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
