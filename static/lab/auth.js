// The provider auth card's two behaviours (templates/auth_flows/card.html). No inline JS:
// the CSP allows only nonce'd script files. Safe to load twice.
(() => {
  if (window.labAuthCard) return;
  window.labAuthCard = true;

  // Copy buttons: data-copy holds the text. The Clipboard API needs a secure context
  // (https or localhost); elsewhere the URL text is selected for Ctrl-C instead.
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    try {
      await navigator.clipboard.writeText(button.dataset.copy);
      button.textContent = "Copied";
    } catch {
      const code = button.closest(".auth-card")?.querySelector(".auth-url-text code");
      if (code) window.getSelection().selectAllChildren(code);
      button.textContent = "Press Ctrl-C to copy";
    }
  });

  // htmx 2 does not swap 4xx/5xx responses by default; the card's errors (400 bad code,
  // 502 login failed, 504 timeout) carry the message to show, so let them swap in.
  document.addEventListener("htmx:beforeSwap", (event) => {
    const inCard = event.detail.elt.closest && event.detail.elt.closest(".auth-card");
    const status = event.detail.xhr.status;
    if (inCard && [400, 502, 504].includes(status)) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
