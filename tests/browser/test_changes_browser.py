"""The changes view in Chromium: a live run (the real Claude Code TUI against the
scripted model) writes, edits, stages and commits files; its changes page, opened before the
turn, refreshes when the turn ends and shows each kind where it belongs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import text, tool_use, when
from tests.browser.conftest import LabServer, screenshot, start_run
from tests.browser.test_chat_browser import expect_state, open_run, send

pytestmark = pytest.mark.browser

SUBJECT = "Add committed.py and edit the README"


def worktree_of(lab_server: LabServer, name: str) -> Path:
    [path] = (lab_server.log.parent / "data" / "worktrees").glob(f"{name}-*")
    return path


def test_a_live_runs_written_edited_and_committed_files_each_show_where_they_belong(
    context: Any, page: Any, lab_server: LabServer
) -> None:
    run = start_run(page, lab_server.repo, "lab/browser-diff", options={"permission_mode": "acceptEdits"})
    wt = worktree_of(lab_server, run.name)
    readme = str(wt / "README.md")
    # The agent's HOME has no git identity: the command brings its own.
    identity = "-c user.name=Agent -c user.email=agent@example.invalid"
    commit = (
        f'git add committed.py README.md && git {identity} commit -q -m "{SUBJECT}" && git add staged.txt'
    )
    lab_server.model.script.add(
        when(
            "DIFF-TURN-c41",
            tool_use(
                "Write", {"file_path": str(wt / "committed.py"), "content": "def answer():\n    return 42\n"}
            ),
            tool_use("Read", {"file_path": readme}),
            tool_use(
                "Edit", {"file_path": readme, "old_string": "browser test repo", "new_string": "edited repo"}
            ),
            tool_use("Write", {"file_path": str(wt / "staged.txt"), "content": "staged by the agent\n"}),
            tool_use("Write", {"file_path": str(wt / "fresh notes.md"), "content": "# fresh\n"}),
            tool_use("Bash", {"command": commit, "description": "Commit the work"}),
            tool_use(
                "Edit", {"file_path": readme, "old_string": "edited repo", "new_string": "edited again"}
            ),
            text("DIFF done."),
        )
    )
    changes = context.new_page()
    try:
        changes.goto(run.url + "changes/")
        changes.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
        expect(changes.locator(".commits")).to_contain_text("No commits yet.")

        open_run(page, run)
        expect_state(page, "idle")
        send(page, "DIFF-TURN-c41 please")
        allow = page.locator("#dialog form.dialog-approval").get_by_role("button", name="Allow once")
        expect(allow).to_be_visible()
        allow.click()
        expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("DIFF done.")
        expect_state(page, "idle")

        # The changes page, untouched since: refreshed by the turn's end.
        expect(changes.locator(".commit .subject")).to_have_text([SUBJECT])
        committed = changes.locator(".section-committed details.file")
        expect(committed).to_have_count(2)
        added = changes.locator('.section-committed details.file[data-path="committed.py"]')
        expect(added.locator(".status")).to_have_text("added")
        expect(added.locator(".line-add .text")).to_have_text(["def answer():", "    return 42"])
        expect(added.locator(".line-add .k").first).to_have_text("def")  # highlighted server-side
        edited = changes.locator('.section-committed details.file[data-path="README.md"]')
        expect(edited.locator(".status")).to_have_text("modified")
        expect(edited.locator(".line-del .text")).to_have_text(["# browser test repo"])
        expect(edited.locator(".line-add .text")).to_have_text(["# edited repo"])
        staged = changes.locator(".section-staged details.file")
        expect(staged).to_have_count(1)
        expect(staged).to_have_attribute("data-path", "staged.txt")
        unstaged = changes.locator(".section-unstaged details.file")
        expect(unstaged).to_have_attribute("data-path", "README.md")
        expect(unstaged.locator(".line-add .text")).to_have_text(["# edited again"])
        untracked = changes.locator(".section-untracked details.file")
        expect(untracked).to_have_count(1)
        expect(untracked).to_have_attribute("data-path", "fresh notes.md")
        expect(untracked.locator(".status")).to_have_text("untracked")
        screenshot(changes, "26-changes")
        # Collapsible per file.
        untracked.locator("summary").click()
        expect(untracked.locator(".diff")).to_be_hidden()
    finally:
        changes.close()


def test_a_file_named_like_markup_shows_as_text(context: Any, page: Any, lab_server: LabServer) -> None:
    """The agent names its files: a name that is markup shows as the name, and the page grows
    no element of its own."""
    run = start_run(page, lab_server.repo, "lab/browser-odd-name")
    wt = worktree_of(lab_server, run.name)
    (wt / "<b id=evil>x<").mkdir()
    (wt / "<b id=evil>x</b>").write_text("<i id=evil-text>hi</i>\n")
    page.goto(run.url + "changes/")
    untracked = page.locator(".section-untracked details.file")
    expect(untracked).to_have_count(1)
    expect(untracked).to_have_attribute("data-path", "<b id=evil>x</b>")
    expect(untracked.locator(".path")).to_have_text("<b id=evil>x</b>")
    expect(untracked.locator(".line-add .text")).to_have_text(["<i id=evil-text>hi</i>"])
    expect(page.locator("#evil")).to_have_count(0)
    expect(page.locator("#evil-text")).to_have_count(0)
