"""The shapes of the code-paste sign-in link the pinned CLI prints (compat COMPAT-login L3),
for the live and browser login tests: a link lab has not seen is drift, not a pass."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

CODE_CALLBACK = "https://platform.claude.com/oauth/code/callback"


def printed_link_shape(url: str, browser_url: str) -> str | None:
    """Which known shape the printed code-paste link has, if it is a link for the same login as
    the $BROWSER one (compat §11 L3): "full" (2.1.328: the whole authorize URL, redirect_uri the
    platform's callback page, the same state and PKCE challenge) or "short" (2.1.332: a
    claude.ai link whose query is `z-<the same PKCE challenge>`). None: a shape lab has not seen."""
    local = parse_qs(urlsplit(browser_url).query)
    [challenge] = local["code_challenge"]
    query = parse_qs(urlsplit(url).query)
    if (
        url.startswith("https://claude.com/cai/oauth/authorize?")
        and query.get("redirect_uri") == [CODE_CALLBACK]
        and query.get("state") == local["state"]
        and query.get("code_challenge") == [challenge]
    ):
        return "full"
    if url == f"https://claude.ai/oauth/authorize?z-{challenge}":
        return "short"
    return None
