"""Resume in a real browser against the real Claude Code TUI: a conversation from an ended run
is listed on its page, Resume starts a new run whose chat shows the earlier messages, and the
next message is answered in the same conversation."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import text, when
from tests.browser.conftest import LIVE_TIMEOUT_MS, LabServer, start_run

pytestmark = pytest.mark.browser


def send(page: Any, message: str) -> None:
    box = page.locator("#composer textarea")
    box.fill(message)
    box.press("Enter")


def test_an_ended_runs_conversation_is_resumed_with_its_history(page: Any, lab_server: LabServer) -> None:
    lab_server.model.script.add(when("RESUME-WEB-1", text("First answer RESUME-WEB-1.")))
    lab_server.model.script.add(when("RESUME-WEB-2", text("Second answer, same conversation.")))
    run = start_run(page, lab_server.repo, "lab/browser-resume")
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    expect(page.locator("#panel")).to_have_attribute("data-state", "idle", timeout=LIVE_TIMEOUT_MS)
    send(page, "remember this RESUME-WEB-1")
    expect(page.locator("#transcript .msg-assistant_text").last).to_contain_text(
        "First answer RESUME-WEB-1.", timeout=LIVE_TIMEOUT_MS
    )
    page.once("dialog", lambda d: d.accept())
    # End answers with a redirect to the run's page, once the run has ended: navigating there
    # ourselves raced it (the page loaded before the end and listed no sessions, or the
    # navigation was aborted by the redirect).
    with page.expect_navigation(url=run.url):
        page.get_by_role("button", name="End run").click()
    session = page.locator("#sessions li.session")
    expect(session).to_have_count(1, timeout=LIVE_TIMEOUT_MS)
    expect(session).to_contain_text("remember this RESUME-WEB-1")
    session.get_by_role("button", name="Resume").click()
    expect(page).not_to_have_url(run.url, timeout=LIVE_TIMEOUT_MS)
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    # The earlier conversation, read from the session's own transcript.
    expect(page.locator("#transcript .msg-user_text").first).to_contain_text("remember this RESUME-WEB-1")
    expect(page.locator("#transcript .msg-assistant_text").first).to_contain_text(
        "First answer RESUME-WEB-1."
    )
    expect(page.locator("#panel")).to_have_attribute("data-state", "idle", timeout=LIVE_TIMEOUT_MS)
    send(page, "and now RESUME-WEB-2")
    expect(page.locator("#transcript .msg-assistant_text").last).to_contain_text(
        "Second answer, same conversation.", timeout=LIVE_TIMEOUT_MS
    )
    [request] = [r for r in lab_server.model.requests if "RESUME-WEB-2" in str(r.get("body"))][:1]
    assert "First answer RESUME-WEB-1." in str(request["body"]["messages"])
