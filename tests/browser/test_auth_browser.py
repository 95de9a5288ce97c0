"""The provider auth card in Chromium, end to end, with the real `claude auth login` offline.

The login server (conftest.auth_server) runs with the test-only LAB_LOGIN_EXTRA_ENV, so the CLI
reaches compat/claude_code/login_proxy.py's TLS CONNECT proxy for the token, profile and roles endpoints
and the whole login runs for real, into a private agent HOME. A second, idle tab on
/providers/ proves the status flip arrives by the provider.auth.changed push, not by the
clicking tab's own response.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from compat.claude_code.login_links import printed_link_shape
from compat.claude_code.login_proxy import Account
from tests.browser.conftest import ARTIFACTS, AuthServer, _git_repo, screenshot

pytestmark = pytest.mark.browser

CARD = "#auth-card-claude-code"
PUSHED = f'{CARD}[data-event="provider.auth.changed"]'
EMAIL = Account().email


def open_providers(page: Any) -> None:
    page.goto("/providers/")
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    page.evaluate("window.__noReload = true")


def login_children(server: AuthServer) -> list[str]:
    """`claude auth …` children of the server still around (running or unreaped)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue  # it exited while we looked
        if ppid == server.proc.pid and b"auth" in cmdline:
            found.append(f"{stat.parent.name}: {b' '.join(cmdline).decode(errors='replace')}")
    return found


@pytest.fixture
def auth_page(auth_context: Any, auth_server: AuthServer, request: pytest.FixtureRequest) -> Any:
    p = auth_context.new_page()
    yield p
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        p.screenshot(path=str(ARTIFACTS / f"FAILED-{request.node.name}.png"), full_page=True)
        print(f"--- login server log tail ---\n{auth_server.log_tail()}")
    p.close()


def test_log_in_from_the_card_and_the_status_flips_without_reload(
    auth_page: Any, auth_context: Any, auth_server: AuthServer
) -> None:
    # An idle tab that never clicks: only the websocket push can change its card.
    observer = auth_context.new_page()
    try:
        open_providers(observer)
        open_providers(auth_page)
        card = auth_page.locator(CARD)
        expect(card.locator(".auth-status")).to_have_text(re.compile(r"^\s*Not logged in"))
        expect(observer.locator(f"{CARD} .auth-status")).to_have_text(re.compile(r"^\s*Not logged in"))

        # 1. Log in: the card shows the code-paste URL the CLI printed, and the code field.
        card.locator(".auth-login").click()
        link = card.locator("a.auth-url")
        expect(link).to_be_visible()
        url = link.get_attribute("href")
        expect(card.locator(".auth-url-text code")).to_have_text(url or "")
        expect(card.locator("details.auth-alternative")).to_have_count(1)  # the localhost way
        local = card.locator("details.auth-alternative a").get_attribute("href") or ""
        # The link the CLI printed is for this same login, in a shape seen from the pinned CLI.
        assert url is not None and printed_link_shape(url, local) is not None, (url, local)
        query = parse_qs(urlsplit(local).query)  # the login's state travels in the local link
        screenshot(auth_page, "13-login-pending")

        # 2. A paste that caught more than the code: lab's 400 says why in the code form (the
        # server's swap), the login stays on screen.
        code = card.locator("input[name=code]")
        code.fill("two words")
        card.get_by_role("button", name="Submit code").click()
        expect(card.locator(".auth-code .auth-error")).to_have_text(
            "Paste the code on its own, without spaces or line breaks."
        )
        expect(link).to_be_visible()
        expect(auth_page.locator("#send-error")).to_be_hidden()

        # The code the sign-in page would show (CODE#STATE), pasted and submitted.
        code.fill(f"browser-code-42#{query['state'][0]}")
        card.get_by_role("button", name="Submit code").click()

        # 3. Logged in, on both tabs, with no reload; the idle one by the push.
        expect(card.locator(".auth-status")).to_contain_text(f"Logged in as {EMAIL}")
        pushed = observer.locator(PUSHED)
        expect(pushed).to_have_count(1)
        expect(pushed.locator(".auth-status")).to_contain_text(f"Logged in as {EMAIL}")
        expect(pushed).to_have_class(re.compile(r"\blogged-in\b"))
        expect(pushed.locator(".auth-logout")).to_be_visible()
        for p in (auth_page, observer):
            assert p.evaluate("window.__noReload") is True, "the page reloaded"
        screenshot(observer, "13-logged-in-pushed")

        # The code reached the CLI and the CLI the (fake) token endpoint; the child is gone.
        [token] = auth_server.proxy.token_requests()
        assert token.body["grant_type"] == "authorization_code"
        assert token.body["code"] == "browser-code-42"
        assert token.body["state"] == query["state"][0]
        assert (auth_server.home / ".claude" / ".credentials.json").exists()
        assert login_children(auth_server) == []

        # 4. Log out from the observer tab: the first tab flips back by the push.
        observer.locator(f"{CARD} .auth-logout").click()
        expect(observer.locator(f"{CARD} .auth-status")).to_have_text(re.compile(r"^\s*Not logged in"))
        expect(auth_page.locator(PUSHED)).to_have_count(1)
        expect(auth_page.locator(f"{PUSHED} .auth-status")).to_have_text(re.compile(r"^\s*Not logged in"))
        expect(auth_page.locator(f"{CARD} .auth-login")).to_be_visible()
        assert auth_page.evaluate("window.__noReload") is True, "the page reloaded"
        assert not (auth_server.home / ".claude" / ".credentials.json").exists()
        assert login_children(auth_server) == []
    finally:
        observer.close()


def test_a_run_refused_while_logged_out_shows_the_auth_card(
    auth_page: Any, auth_server: AuthServer, tmp_path: Path
) -> None:
    repo = _git_repo(tmp_path / "repo")
    # Another tab, without the card: the card's push must not be an error there.
    errors: list[str] = []
    elsewhere = auth_page.context.new_page()
    elsewhere.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    elsewhere.goto("/")
    elsewhere.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    # Here the 422 itself is logged by Chromium ("Failed to load resource"): that is the status,
    # not a page error.
    auth_page.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource")
            else None
        ),
    )
    auth_page.goto("/runs/new/")
    auth_page.get_by_label("Repository").fill(str(repo))
    auth_page.get_by_label("Branch").fill("lab/logged-out")
    auth_page.get_by_role("button", name="Start").click()
    card = auth_page.locator(CARD)
    expect(card).to_be_visible(timeout=10_000)
    expect(card.locator(".auth-status")).to_have_text(re.compile(r"^\s*Not logged in"))
    expect(card.locator(".auth-login")).to_be_visible()
    # Both routes to a credential are named: the key in LAB_AGENT_ENV and the account login.
    expect(auth_page.locator("main div.error")).to_contain_text(
        "ANTHROPIC_API_KEY) and restart lab, or log in"
    )
    elsewhere.wait_for_timeout(500)  # the card's push reaches the other tab; nothing to wait on
    elsewhere.close()
    assert errors == []
