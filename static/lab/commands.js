// The composer's slash-command menu. The server renders it (runs/views.py run_commands, the
// #command_menu partial of templates/runs/detail.html) for the command word typed so far, first
// row selected; this script only asks for it when that word changes (an htmx trigger: the
// page's CSP allows no hx-trigger filter), and drives it with the keys and the mouse, which
// HTML cannot. Running a command rides the plain reply path: picking one only fills the composer.
"use strict";

(function () {
  const WORD = /^\/\S*$/; // "/rev", not "/review some args" or a multi-line text

  function menu() { return document.getElementById("command-menu"); }
  function rows() { const m = menu(); return m ? Array.from(m.querySelectorAll("[role=option]")) : []; }
  function isOpen() { const m = menu(); return !!m && !m.hidden && rows().length > 0; }
  function active() { return rows().findIndex(function (r) { return r.getAttribute("aria-selected") === "true"; }); }

  function select(i) {
    rows().forEach(function (r, j) { r.setAttribute("aria-selected", j === i ? "true" : "false"); });
    const current = rows()[i];
    if (current) current.scrollIntoView({ block: "nearest" });
  }

  // Closed here at once; a menu still on its way is aborted, so it cannot open it again.
  function close(box) {
    if (box && window.htmx) window.htmx.trigger(box, "htmx:abort");
    const m = menu();
    if (!m) return;
    m.replaceChildren();
    m.hidden = true;
  }

  function pick(box, row) {
    box.value = "/" + row.dataset.name + (row.dataset.hint ? " " : "");
    close(box);
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  }

  document.addEventListener("input", function (evt) {
    const box = evt.target;
    if (!(box instanceof HTMLTextAreaElement) || box.getAttribute("hx-trigger") !== "lab:commands") return;
    if (WORD.test(box.value)) window.htmx.trigger(box, "lab:commands");
    else if (isOpen()) close(box);
  });

  document.addEventListener("htmx:afterSwap", function (evt) {
    if (evt.detail.target && evt.detail.target.id === "command-menu") select(Math.max(0, active()));
  });

  document.addEventListener("mousedown", function (evt) {
    const option = evt.target instanceof Element ? evt.target.closest("#command-menu [role=option]") : null;
    if (!option) return;
    evt.preventDefault(); // keep focus in the composer
    const box = document.querySelector("#composer textarea");
    if (box) pick(box, option);
  });

  // Called first by lab.js's composer keydown: true when the menu used the key.
  window.labCommands = {
    handleKey: function (evt, box) {
      if (!isOpen()) return false;
      const shown = rows();
      if (evt.key === "ArrowDown" || evt.key === "ArrowUp") {
        evt.preventDefault();
        select((active() + (evt.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length);
        return true;
      }
      if (evt.key === "Tab" || (evt.key === "Enter" && !evt.shiftKey)) {
        evt.preventDefault();
        const row = shown[Math.max(0, active())];
        const exact = box.value === "/" + row.dataset.name;
        pick(box, row);
        // Enter on a command typed out in full, with no arguments to add, sends it.
        if (evt.key === "Enter" && exact && !row.dataset.hint) box.form.requestSubmit();
        return true;
      }
      if (evt.key === "Escape") { evt.preventDefault(); close(box); return true; }
      return false;
    },
  };
})();
