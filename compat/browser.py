"""A provider's own browser end-to-end test bed (compat/<package>/tests/test_browser_*.py): lab
served by daphne with that provider alone, its agent in a private home on the scripted model,
and a logged-in Chromium page. Built on the browser suite's server and login helpers
(tests/browser/conftest.py)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from playwright.sync_api import expect, sync_playwright

from tests.browser.conftest import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LIVE_TIMEOUT_MS,
    _daphne,
    _free_port,
    _server_env,
    log_in,
)


@contextlib.contextmanager
def provider_lab(
    root: Path, provider_id: str, home: Path, agent_env: Mapping[str, str], bin_dir: Path
) -> Iterator[str]:
    """lab on a free port with only `provider_id` enabled, its agent started from `bin_dir` in
    `home` with `agent_env`: the server's URL."""
    port = _free_port()
    sock = f"labbrowser{provider_id}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    env = _server_env(root, port, f"http://127.0.0.1:{port}", sock, home, dict(agent_env))
    env["LAB_PROVIDERS_ENABLED"] = provider_id
    env["LAB_AGENT_BIN_DIR"] = str(bin_dir)
    with _daphne(root, port, env, sock):
        yield f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def chromium_page(url: str) -> Iterator[Any]:
    """A Chromium page logged in to lab at `url`."""
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            ctx = chromium.new_context(base_url=url, viewport={"width": 1200, "height": 900})
            ctx.set_default_timeout(LIVE_TIMEOUT_MS)
            page = ctx.new_page()
            log_in(page, url)
            yield page
        finally:
            chromium.close()


def send(page: Any, message: str) -> None:
    box = page.locator("#composer textarea")
    box.fill(message)
    box.press("Enter")


def expect_state(page: Any, state: str) -> None:
    expect(page.locator("#panel")).to_have_attribute("data-state", state, timeout=LIVE_TIMEOUT_MS)
