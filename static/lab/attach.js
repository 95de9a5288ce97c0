// Files on the composer: the picker (a phone offers its camera there), a drop on the composer,
// and a paste that carries files (an image on the clipboard). They ride in the composer's file
// input, which htmx sends as multipart; the server checks each one and says why it refuses.
// The composer is re-rendered after every send: the files are kept here and put back after a
// refusal (nothing lost), and dropped after a success.
(function () {
  "use strict";

  let kept = []; // File objects of the message being written
  let runPath = "";

  function composer() { return document.getElementById("composer"); }
  function input() { const c = composer(); return c && c.querySelector('input[type="file"][name="files"]'); }

  function sync() {
    const field = input();
    if (!field) return;
    const transfer = new DataTransfer();
    kept.forEach(function (file) { transfer.items.add(file); });
    field.files = transfer.files;
    draw();
  }

  function draw() {
    const c = composer();
    const list = c && c.querySelector("ul.attachments");
    if (!list) return;
    list.replaceChildren();
    kept.forEach(function (file, index) {
      const item = document.createElement("li");
      item.className = "attachment-chip";
      if (file.type.startsWith("image/")) {
        const img = document.createElement("img");
        img.alt = "";
        const reader = new FileReader();
        reader.onload = function () { img.src = String(reader.result); };
        reader.readAsDataURL(file);
        item.append(img);
      }
      const name = document.createElement("span");
      name.textContent = file.name + " (" + Math.max(1, Math.round(file.size / 1024)) + " KB)";
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "link";
      remove.textContent = "Remove";
      remove.setAttribute("aria-label", "Remove " + file.name);
      remove.addEventListener("click", function () { kept.splice(index, 1); sync(); });
      item.append(name, remove);
      list.append(item);
    });
  }

  function add(files) {
    const field = input();
    if (!field || field.disabled) return;
    Array.from(files).forEach(function (file) {
      // A pasted screenshot is named "image.png" by every browser: number them apart.
      if (file.name === "image.png" && kept.some(function (f) { return f.name === file.name; })) {
        file = new File([file], "image-" + (kept.length + 1) + ".png", { type: file.type });
      }
      kept.push(file);
    });
    sync();
  }

  document.addEventListener("change", function (evt) {
    const field = evt.target;
    if (!(field instanceof HTMLInputElement) || field !== input()) return;
    const picked = Array.from(field.files || []);
    kept = kept.concat(picked.filter(function (f) { return kept.indexOf(f) < 0; }));
    sync();
  });

  document.addEventListener("paste", function (evt) {
    const c = composer();
    if (!c || !evt.target || !c.contains(evt.target)) return;
    const files = evt.clipboardData ? Array.from(evt.clipboardData.files) : [];
    if (!files.length) return; // text pastes stay the textarea's
    evt.preventDefault();
    add(files);
  });

  document.addEventListener("dragover", function (evt) {
    const c = composer();
    if (!c || !c.contains(evt.target) || !evt.dataTransfer) return;
    if (Array.from(evt.dataTransfer.types).indexOf("Files") < 0) return;
    evt.preventDefault();
    c.classList.add("dropping");
  });
  document.addEventListener("dragleave", function (evt) {
    const c = composer();
    if (c && !c.contains(evt.relatedTarget)) c.classList.remove("dropping");
  });
  document.addEventListener("drop", function (evt) {
    const c = composer();
    if (!c || !c.contains(evt.target) || !evt.dataTransfer || !evt.dataTransfer.files.length) return;
    evt.preventDefault();
    c.classList.remove("dropping");
    add(evt.dataTransfer.files);
  });

  // The composer's own answer, before it replaces the form (the old form is detached after,
  // and its events reach no one): a success (200) clears the files, a refusal keeps them.
  document.addEventListener("htmx:beforeSwap", function (evt) {
    const target = evt.detail && evt.detail.target;
    if (!(target instanceof HTMLFormElement) || target.id !== "composer") return;
    if (evt.detail.xhr && evt.detail.xhr.status === 200) kept = [];
  });
  document.addEventListener("htmx:afterSwap", function () {
    // A new page's composer starts empty; the same page's keeps what is being written.
    if (runPath !== location.pathname) { runPath = location.pathname; kept = []; }
    if (input()) sync();
  });
  document.addEventListener("DOMContentLoaded", function () { runPath = location.pathname; });
})();
