// The Changes page's review tray. A line number in the diff (a link, as a forge's line numbers
// are: a row of code has no room for a full-size button) picks a line (shift-click another in
// the same file for a range); the new comment is written in the tray, outside #changes, so a
// refresh when a turn ends loses nothing. Comments are kept in this browser's localStorage per
// run until sent: they are the operator's drafts, like the composer's, and need no table. The
// server formats and sends them as one message (runs/ship_views.py run_review), through the
// chat's reply path; a success (the lab-review-sent event) empties the tray.
"use strict";

(function () {
  let anchor = null; // the row a range starts at
  let draft = null; // {path, start, end, old, code} waiting for its text

  function tray() { return document.getElementById("review-tray"); }
  function key() { const t = tray(); return t ? "lab:review:" + t.dataset.run : null; }

  function load() {
    try { return JSON.parse(localStorage.getItem(key()) || "[]") || []; } catch (e) { return []; }
  }

  function save(items) {
    if (items.length) localStorage.setItem(key(), JSON.stringify(items));
    else localStorage.removeItem(key());
    const field = document.querySelector("#review-send input[name=comments]");
    if (field) field.value = JSON.stringify(items);
  }

  function place(c) {
    return c.path + ":" + (c.start === c.end ? c.start : c.start + "-" + c.end) + (c.old ? " (removed lines)" : "");
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function render() {
    const t = tray();
    if (!t) return;
    const items = load();
    save(items);
    t.hidden = false;
    t.querySelector(".review-count").textContent = String(items.length);
    t.querySelector("#review-send button").disabled = items.length === 0;
    const list = t.querySelector(".review-list");
    list.replaceChildren();
    if (draft) {
      const li = el("li", "review-draft");
      li.append(el("code", "place", place(draft)), el("pre", "code", draft.code.join("\n")));
      const box = el("textarea");
      box.rows = 3;
      box.setAttribute("aria-label", "Comment on " + place(draft));
      const add = el("button", "review-add", "Add comment");
      add.type = "button";
      const cancel = el("button", "secondary review-cancel", "Cancel");
      cancel.type = "button";
      li.append(box, add, cancel);
      list.append(li);
      box.focus();
    }
    items.forEach(function (c, i) {
      const li = el("li", "review-comment");
      li.dataset.index = String(i);
      const box = el("textarea");
      box.rows = 2;
      box.value = c.text;
      box.setAttribute("aria-label", "Comment on " + place(c));
      const remove = el("button", "secondary review-remove", "Remove");
      remove.type = "button";
      li.append(el("code", "place", place(c)), el("pre", "code", c.code.join("\n")), box, remove);
      list.append(li);
    });
    if (!items.length && !draft) list.append(el("li", "hint", "No comments yet: click a line number in the diff to comment on it."));
  }

  function sign(row) {
    return row.classList.contains("line-add") ? "+" : row.classList.contains("line-del") ? "-" : " ";
  }

  function pick(row, extend) {
    const file = row.closest("details.file");
    const start = extend && anchor && anchor.closest("details.file") === file ? anchor : row;
    const all = Array.from(file.querySelectorAll("tr[data-new]"));
    let [a, b] = [all.indexOf(start), all.indexOf(row)];
    if (a > b) [a, b] = [b, a];
    const rows = all.slice(a, b + 1);
    document.querySelectorAll("#changes tr.picked").forEach(function (r) { r.classList.remove("picked"); });
    rows.forEach(function (r) { r.classList.add("picked"); });
    anchor = start;
    const news = rows.map(function (r) { return Number(r.dataset.new); }).filter(Boolean);
    const olds = rows.map(function (r) { return Number(r.dataset.old); }).filter(Boolean);
    const nums = news.length ? news : olds;
    draft = {
      path: file.dataset.path,
      start: Math.min.apply(null, nums),
      end: Math.max.apply(null, nums),
      old: !news.length,
      code: rows.map(function (r) { return sign(r) + r.querySelector(".text").textContent; }),
    };
    render();
  }

  document.addEventListener("click", function (evt) {
    const target = evt.target instanceof Element ? evt.target : null;
    if (!target) return;
    const line = target.closest("#changes .line-pick");
    if (line) { evt.preventDefault(); pick(line.closest("tr"), evt.shiftKey); return; }
    if (target.closest(".review-add")) {
      const text = target.closest("li").querySelector("textarea").value;
      if (!text.trim()) return;
      save(load().concat([Object.assign({}, draft, { text: text })]));
      draft = null;
      anchor = null;
      document.querySelectorAll("#changes tr.picked").forEach(function (r) { r.classList.remove("picked"); });
      render();
    } else if (target.closest(".review-cancel")) {
      draft = null;
      render();
    } else if (target.closest(".review-remove")) {
      const items = load();
      items.splice(Number(target.closest("li").dataset.index), 1);
      save(items);
      render();
    }
  });

  document.addEventListener("input", function (evt) {
    const li = evt.target instanceof Element ? evt.target.closest("li.review-comment") : null;
    if (!li) return;
    const items = load();
    items[Number(li.dataset.index)].text = evt.target.value;
    save(items);
  });

  document.addEventListener("lab-review-sent", function () {
    save([]);
    render();
  });

  // A commit or a merge moved the worktree's changes: read them again.
  document.addEventListener("lab-changes-moved", function () {
    const changes = document.getElementById("changes");
    if (changes && window.htmx) window.htmx.trigger(changes, "turn-ended");
  });

  document.addEventListener("DOMContentLoaded", render);
})();
