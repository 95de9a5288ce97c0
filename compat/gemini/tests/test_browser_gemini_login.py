"""Gemini's auth card in Chromium, end to end, with the real CLI's Google sign-in offline.

lab is served by daphne with Gemini alone and the test-only LAB_LOGIN_EXTRA_ENV
(tests/browser/settings_login.py), so the CLI reaches compat/gemini/login_proxy.py's TLS CONNECT
proxy for Google's endpoints and the sign-in runs for real, into a private agent home.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from compat.browser import chromium_page
from compat.gemini.home import launcher_dir
from compat.gemini.login_proxy import GOOD_CODE, Behaviour, GeminiLoginProxy, gemini_certs
from tests.browser.conftest import _daphne, _free_port, _server_env

pytestmark = pytest.mark.browser

CARD = "#auth-card-gemini"


def login_children(daphne_pid: int) -> list[str]:
    """The server's login children (the CLI) still around, running or unreaped."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue  # it exited while we looked
        if ppid == daphne_pid and b"gemini" in cmdline:
            found.append(stat.parent.name)
    return found


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path, GeminiLoginProxy, int]]:
    home = tmp_path / "agent-home"
    home.mkdir()
    port = _free_port()
    sock = f"labbrowsergl-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    with GeminiLoginProxy(gemini_certs(tmp_path / "tls"), Behaviour()) as proxy:
        env = _server_env(tmp_path, port, f"http://127.0.0.1:{port}", sock, home, {})
        env["LAB_PROVIDERS_ENABLED"] = "gemini"
        env["LAB_AGENT_BIN_DIR"] = str(launcher_dir())
        env["DJANGO_SETTINGS_MODULE"] = "tests.browser.settings_login"
        env["LAB_TEST_LOGIN_EXTRA_ENV"] = json.dumps(proxy.env())
        with _daphne(tmp_path, port, env, sock) as (proc, _log):
            yield f"http://127.0.0.1:{port}", home, proxy, proc.pid


def test_sign_in_with_google_from_the_card(server: Any) -> None:
    url, home, proxy, daphne_pid = server
    with chromium_page(url) as page:
        page.goto("/providers/")
        card = page.locator(CARD)
        expect(card.locator(".auth-status")).to_have_text(re.compile(r"^\s*Not logged in"))

        # The link the CLI printed: Google's sign-in page for the code-paste flow.
        card.locator(".auth-login").click()
        link = card.locator("a.auth-url")
        expect(link).to_be_visible()
        query = parse_qs(urlsplit(link.get_attribute("href") or "").query)
        assert query["redirect_uri"] == ["https://codeassist.google.com/authcode"]

        # A code Google refuses: the CLI's reason on the card, which offers a new login.
        card.locator("input[name=code]").fill("4/0Ab-not-the-code")
        card.get_by_role("button", name="Submit code").click()
        expect(card.locator(".auth-error")).to_have_text(
            "The sign-in server refused that code (invalid_grant). Start a new login for a fresh link."
        )
        assert login_children(daphne_pid) == []

        expect(card.locator(".auth-status")).to_have_text(re.compile(r"^\s*Not logged in"))

        # A new login, the right code: logged in as the account Google's user info names.
        card.locator(".auth-login").click()
        expect(card.locator("a.auth-url")).to_be_visible()
        card.locator("input[name=code]").fill(GOOD_CODE)
        card.get_by_role("button", name="Submit code").click()
        expect(card.locator(".auth-status")).to_contain_text(
            "Logged in as operator@example.invalid · Signed in with Google"
        )
        assert (home / ".gemini" / "oauth_creds.json").exists()
        assert login_children(daphne_pid) == []

        # Log out: the stored sign-in is gone.
        card.locator(".auth-logout").click()
        expect(card.locator(".auth-status")).to_have_text(re.compile(r"^\s*Not logged in"))
        assert not (home / ".gemini" / "oauth_creds.json").exists()
    assert [r.path for r in proxy.token_requests()] == ["/token", "/token"]
