// Composer autocomplete for slash commands: the run's chat-safe catalog, filtered as you type.
// Running a command rides the plain reply path: picking one only fills the composer.
"use strict";

(function () {
  const TTL_MS = 30000;
  let cache = { url: "", at: 0, rows: [] };
  let open = false;
  let active = 0;
  let shown = [];

  function menu() { return document.getElementById("command-menu"); }

  async function catalog(url) {
    if (cache.url === url && Date.now() - cache.at < TTL_MS) return cache.rows;
    const resp = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (!resp.ok) return [];
    const rows = (await resp.json()).commands || [];
    cache = { url: url, at: Date.now(), rows: rows };
    return rows;
  }

  // "/na" → rows whose name starts with "na" first, then those containing it.
  function filter(rows, query) {
    const q = query.toLowerCase();
    const starts = rows.filter(function (r) { return r.name.toLowerCase().startsWith(q); });
    const contains = rows.filter(function (r) {
      return !r.name.toLowerCase().startsWith(q) && r.name.toLowerCase().includes(q);
    });
    return starts.concat(contains).slice(0, 50);
  }

  function render() {
    const m = menu();
    if (!m) return;
    m.replaceChildren();
    shown.forEach(function (row, i) {
      const li = document.createElement("div");
      li.setAttribute("role", "option");
      li.dataset.index = String(i);
      li.setAttribute("aria-selected", i === active ? "true" : "false");
      const name = document.createElement("code"); name.textContent = "/" + row.name;
      li.appendChild(name);
      if (row.argument_hint) {
        const hint = document.createElement("span"); hint.className = "hint"; hint.textContent = row.argument_hint;
        li.appendChild(hint);
      }
      const desc = document.createElement("span"); desc.className = "desc"; desc.textContent = row.description;
      li.appendChild(desc);
      m.appendChild(li);
    });
    m.hidden = shown.length === 0;
    open = shown.length > 0;
    const current = m.querySelector("[aria-selected=true]");
    if (current) current.scrollIntoView({ block: "nearest" });
  }

  function close() { shown = []; active = 0; render(); }

  function pick(box, row) {
    box.value = "/" + row.name + (row.argument_hint ? " " : "");
    close();
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  }

  async function update(box) {
    const value = box.value;
    // Only the command word itself: "/rev" but not "/review some args" or a multi-line text.
    const match = /^\/([^\s]*)$/.exec(value);
    if (!match) { close(); return; }
    const rows = await catalog(box.dataset.commandsUrl);
    if (box.value !== value) return; // typed on meanwhile
    shown = filter(rows, match[1]);
    active = 0;
    render();
  }

  document.addEventListener("input", function (evt) {
    const box = evt.target;
    if (box instanceof HTMLTextAreaElement && box.dataset.commandsUrl) update(box);
  });

  document.addEventListener("mousedown", function (evt) {
    const option = evt.target instanceof Element ? evt.target.closest("#command-menu [role=option]") : null;
    if (!option) return;
    evt.preventDefault(); // keep focus in the composer
    const box = document.querySelector("#composer textarea");
    if (box) pick(box, shown[Number(option.dataset.index)]);
  });

  // Called first by lab.js's composer keydown: true when the menu used the key.
  window.labCommands = {
    handleKey: function (evt, box) {
      if (!open) return false;
      if (evt.key === "ArrowDown" || evt.key === "ArrowUp") {
        evt.preventDefault();
        active = (active + (evt.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
        render();
        return true;
      }
      if (evt.key === "Tab" || (evt.key === "Enter" && !evt.shiftKey)) {
        evt.preventDefault();
        const row = shown[active];
        const exact = box.value === "/" + row.name;
        pick(box, row);
        // Enter on a command typed out in full, with no arguments to add, sends it.
        if (evt.key === "Enter" && exact && !row.argument_hint) box.form.requestSubmit();
        return true;
      }
      if (evt.key === "Escape") { evt.preventDefault(); close(); return true; }
      return false;
    },
  };

  document.addEventListener("htmx:afterSwap", function (evt) {
    if (evt.detail.target && evt.detail.target.id === "composer") close();
  });
})();
