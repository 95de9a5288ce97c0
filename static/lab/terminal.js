// The Terminal view: the run's tmux pane drawn by xterm.js from the terminal socket's bytes.
// Read-only unless this login holds the keyboard (the server decides and re-checks every key).
// The pane keeps lab's size: the view scales the font so its columns fit, and scrolls beyond.
(function () {
  "use strict";
  const box = document.getElementById("terminal");
  if (!box || !window.Terminal) return;
  const status = document.getElementById("terminal-status");
  const term = new window.Terminal({
    convertEol: false, cursorBlink: false, scrollback: 5000, fontSize: 14,
    disableStdin: true, allowProposedApi: false,
  });
  const fit = new window.FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(box.querySelector(".screen"));
  let socket = null;
  let mine = false;
  let ended = false;
  let retry = 500;
  let size = { cols: 0, rows: 0 };

  function say(text, isError) {
    if (!status) return;
    status.textContent = text;
    status.classList.toggle("error", !!isError);
  }

  // Fit the pane's columns to the box by the font size (never by resizing the pane).
  function scale() {
    if (!size.cols) return;
    const current = term.options.fontSize;
    const proposed = fit.proposeDimensions();
    if (!proposed || !proposed.cols) return;
    const wanted = Math.max(6, Math.min(16, Math.floor(current * proposed.cols / size.cols)));
    if (wanted !== current) term.options.fontSize = wanted;
  }
  window.addEventListener("resize", scale);

  function setMine(value, holder) {
    mine = value;
    term.options.disableStdin = !mine;
    box.classList.toggle("typing", mine);
    if (mine) term.focus();
    if (!ended) say(mine ? "You hold the keyboard: keys go to the terminal." : (holder ? holder + " holds the keyboard." : "Live · read-only."));
  }

  function send(frame) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + box.dataset.socket);
    socket.binaryType = "arraybuffer";
    socket.onopen = function () { retry = 500; };
    socket.onmessage = function (evt) {
      if (typeof evt.data !== "string") { term.write(new Uint8Array(evt.data)); return; }
      const frame = JSON.parse(evt.data);
      if (frame.type === "hello") {
        size = { cols: frame.cols, rows: frame.rows };
        term.reset();
        term.resize(frame.cols, frame.rows);
        scale();
        box.dataset.cols = frame.cols; box.dataset.rows = frame.rows;
        box.dataset.live = "1";
        setMine(mine);
      } else if (frame.type === "keyboard") {
        setMine(!!frame.mine, frame.holder);
        // The grant changed elsewhere (another tab, a logout): redraw its controls.
        const kb = document.getElementById("keyboard");
        if (kb && (kb.dataset.mine === "1") !== !!frame.mine && window.htmx) {
          window.htmx.ajax("GET", location.pathname, { target: "#keyboard", select: "#keyboard", swap: "outerHTML" });
        }
      } else if (frame.type === "refused") {
        say(frame.reason, true);
      } else if (frame.type === "ended") {
        ended = true;
        say("The run's terminal session has ended. Reload the page for its last words.", true);
      }
    };
    socket.onclose = function (evt) {
      box.dataset.live = "0";
      if (ended || evt.code === 4410) { ended = true; say("The run's terminal session has ended.", true); return; }
      if (evt.code === 4401) { say("Logged out: log in again to watch the terminal.", true); return; }
      if (evt.code === 4404) { say("No such run.", true); return; }
      say("Connection lost: reconnecting…", true);
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 10000);
    };
  }

  term.onData(function (data) { if (mine) send({ type: "keys", data: data }); });
  // A paste goes as a paste: tmux brackets it when the TUI asked for that, and lab strips
  // what could end the bracket early.
  box.addEventListener("paste", function (evt) {
    evt.preventDefault();
    evt.stopImmediatePropagation();
    const text = evt.clipboardData ? evt.clipboardData.getData("text/plain") : "";
    if (mine && text) send({ type: "paste", text: text });
  }, true);
  // The phone's missing keys.
  document.addEventListener("click", function (evt) {
    const key = evt.target instanceof Element ? evt.target.closest("button.key[data-hex]") : null;
    if (!key || !mine) return;
    const hex = key.dataset.hex;
    let data = "";
    for (let i = 0; i < hex.length; i += 2) data += String.fromCharCode(parseInt(hex.slice(i, i + 2), 16));
    send({ type: "keys", data: data });
    term.focus();
  });
  // The keyboard's controls answer 409 with their own partial (someone else holds it).
  document.addEventListener("htmx:beforeSwap", function (evt) {
    const xhr = evt.detail.xhr;
    if (xhr.status === 409 && evt.detail.target && evt.detail.target.id === "keyboard") {
      evt.detail.shouldSwap = true; evt.detail.isError = false;
    }
  });
  document.addEventListener("htmx:afterSwap", function (evt) {
    if (evt.detail.target && evt.detail.target.id === "keyboard") {
      const kb = document.getElementById("keyboard");
      if (kb) setMine(kb.dataset.mine === "1");
    }
  });
  const kb = document.getElementById("keyboard");
  if (kb) mine = kb.dataset.mine === "1";
  connect();
})();
