"""The run page's worktree area and the new-run form's name rule, in a real browser.

"Remove the worktree" on one holding uncommitted work answers 409 with the files and a confirm
button: the page must show them (htmx does not swap an error response by itself)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import LIVE_TIMEOUT_MS, LabServer, start_run

pytestmark = pytest.mark.browser


def test_removing_a_worktree_with_uncommitted_work_asks_first(page: Any, lab_server: LabServer) -> None:
    run = start_run(page, lab_server.repo, "lab/browser-remove")
    page.on("dialog", lambda dialog: dialog.accept())  # "End this run?"
    page.get_by_role("button", name="End run").click()
    expect(page.locator("#panel")).to_have_attribute("data-state", "ended", timeout=LIVE_TIMEOUT_MS)
    worktree = Path(page.locator("#worktree small code").inner_text())
    (worktree / "notes.txt").write_text("not committed\n")

    page.get_by_role("button", name="Remove the worktree").click()
    confirm = page.get_by_role("button", name="Delete the uncommitted work and remove the worktree")
    expect(confirm).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    expect(page.locator("#worktree .changes")).to_contain_text("notes.txt")
    expect(page.locator("#worktree .error")).to_contain_text("uncommitted change")
    assert worktree.is_dir()

    confirm.click()
    expect(page.locator("#worktree")).to_contain_text("The worktree was removed", timeout=LIVE_TIMEOUT_MS)
    assert not worktree.exists()
    assert run.url.endswith("/")


def test_the_name_rule_is_checked_before_submitting(page: Any, lab_server: LabServer) -> None:
    page.goto("/runs/new/")
    expect(page.locator(".field", has=page.locator("[name=name]"))).to_contain_text(
        "starting with a letter or digit"
    )
    page.get_by_label("Repository").fill(str(lab_server.repo))
    page.get_by_label("Branch").fill("lab/browser-badname")
    page.get_by_label("Name").fill("-bad name")
    page.get_by_role("button", name="Start").click()
    assert page.eval_on_selector("[name=name]", "e => e.validity.patternMismatch") is True
    expect(page).to_have_url(lab_server.url + "/runs/new/")


def test_an_agent_that_exits_shows_why_without_a_reload(page: Any, lab_server: LabServer) -> None:
    """The watcher sees the CLI's process exit and pushes the panel with what its terminal
    showed last (tmux kept the dead pane for it)."""
    run = start_run(page, lab_server.repo, "lab/browser-exits")
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    target = f"={run.tmux_session}:"
    shown = subprocess.run(
        ["tmux", "-L", lab_server.tmux_socket, "display-message", "-p", "-t", target, "#{pane_pid}"],
        capture_output=True,
        text=True,
        check=True,
    )
    os.kill(int(shown.stdout), signal.SIGTERM)
    expect(page.locator("#panel")).to_have_attribute("data-state", "ended", timeout=LIVE_TIMEOUT_MS)
    expect(page.locator("#panel .exit-reason")).to_contain_text("Claude Code exited")
    expect(page.locator("#panel .exit-reason pre")).not_to_be_empty()
