"""No page logs an error over a run's life: every page's socket hears every run's row and
every provider's card, and a fragment whose target the page lacks was an htmx error
(htmx:oobErrorNoTarget #run-row-N, twice per state change, on every page but the runs list)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import text, when
from tests.browser.conftest import LIVE_TIMEOUT_MS, LabServer, start_run
from tests.browser.test_chat_browser import expect_state, send

pytestmark = pytest.mark.browser


def collect_errors(page: Any, errors: list[str], name: str) -> None:
    page.on("console", lambda msg: errors.append(f"{name}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"{name}: {exc}"))


def test_no_page_logs_an_error_over_a_runs_life(context: Any, lab_server: LabServer) -> None:
    lab_server.model.script.add(when("CONSOLE-QUIET-4c1", text("Nothing to see.")))
    errors: list[str] = []
    watchers = {}
    for name, url in (("runs", "/"), ("providers", "/providers/"), ("new-run", "/runs/new/")):
        p = context.new_page()
        collect_errors(p, errors, name)
        p.goto(url)
        p.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
        watchers[name] = p
    page = context.new_page()
    collect_errors(page, errors, "run")
    try:
        run = start_run(page, lab_server.repo, "lab/console-quiet")
        page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
        expect_state(page, "idle")
        send(page, "CONSOLE-QUIET-4c1")
        expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("Nothing to see.")
        expect_state(page, "idle")
        # The runs list got the pushes the others dropped: it shows the run as it is.
        expect(watchers["runs"].locator("tr.run-row", has_text=run.name)).to_have_count(1)
        page.on("dialog", lambda dialog: dialog.accept())  # "End this run?"
        page.get_by_role("button", name="End run").click()
        expect(page.locator("#panel")).to_have_attribute("data-state", "ended", timeout=LIVE_TIMEOUT_MS)
        expect(watchers["runs"].locator("tr.run-row", has_text=run.name).locator(".badge")).to_have_text(
            "ended"
        )
        page.wait_for_timeout(500)  # the last pushes reach the other tabs; nothing to wait on
        assert errors == []
    finally:
        page.close()
        for p in watchers.values():
            p.close()
