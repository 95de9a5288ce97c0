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
})();
