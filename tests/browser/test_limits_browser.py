"""In a real browser against the real Claude Code TUI: the status line's figures reach the run
page while it stays open (pushed, not reloaded), an API key's quota says "not reported", a 429
turn shows the limit on the page, and a message scheduled from the page is listed and
cancelled (compat §16; the scheduler's sending is tested live in
compat/claude_code/tests/test_live_limits.py)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import text, usage_limit, when
from tests.browser.conftest import LIVE_TIMEOUT_MS, LabServer, start_run

pytestmark = pytest.mark.browser


def send(page: Any, message: str) -> None:
    box = page.locator("#composer textarea")
    box.fill(message)
    box.press("Enter")


def test_figures_limit_and_a_scheduled_message_on_the_run_page(page: Any, lab_server: LabServer) -> None:
    lab_server.model.script.add(
        when("FIGURES", text("Counted.")),
        when("LIMITED", usage_limit(resets_in_s=3600)),
    )
    start_run(page, lab_server.repo, "lab/browser-limits")
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    usage = page.locator("#usage")
    expect(usage).to_contain_text("Account quota: not reported", timeout=LIVE_TIMEOUT_MS)
    send(page, "FIGURES please")
    expect(page.locator("#transcript .msg-assistant_text").last).to_contain_text(
        "Counted.", timeout=LIVE_TIMEOUT_MS
    )
    # Pushed by the watcher when the status line changes: the page is not reloaded.
    expect(usage).to_contain_text("Context: 100 tokens · 0% of 1,000,000", timeout=LIVE_TIMEOUT_MS)
    expect(usage).to_contain_text("This turn: 110 tokens")
    expect(usage).to_contain_text("Account quota: not reported")

    send(page, "LIMITED please")
    limit = page.locator("#panel .limit")
    expect(limit).to_contain_text(
        "Rate limit reached (HTTP 429) · reset time not reported", timeout=LIVE_TIMEOUT_MS
    )
    expect(limit).to_contain_text("did not say when it resets")

    page.locator("#schedule summary").click()
    page.locator("#schedule-text").fill("continue")
    page.locator("#schedule-at").fill("2099-01-01T02:00")
    page.get_by_role("button", name="Schedule").click()
    listed = page.locator("#schedule .scheduled-pending")
    expect(listed).to_contain_text("continue")
    expect(listed).to_contain_text("2099-01-01 02:00")
    listed.get_by_role("button", name="Cancel").click()
    expect(page.locator("#schedule .scheduled-cancelled")).to_contain_text("cancelled")
