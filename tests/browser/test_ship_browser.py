"""Review and ship in Chromium, on a live run (the real Claude Code TUI against the scripted
model) whose repository has a local bare repository as its remote: two diff comments reach the
model as one message with both `path:line` blocks; a commit from the page; a push that lands in
the bare repository, with the pull request link of the remote's GitHub-style URL; merge back by
squash and by fast-forward, and refused ones (a dirty main checkout, a conflict), each saying
what happened."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import dynamic, last_human_text, slow_text, text, when
from tests.browser.conftest import LabServer, RunPage, screenshot
from tests.browser.test_changes_browser import worktree_of
from tests.browser.test_chat_browser import expect_state, open_run, send

pytestmark = pytest.mark.browser

GIT = ["git", "-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]
BRANCH = "lab/browser-ship"
MARK = "REVIEW-MARK-5d2"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def start_from(page: Any, repo: Path, branch: str, base_ref: str) -> RunPage:
    page.goto("/runs/new/")
    page.get_by_label("Repository").fill(str(repo))
    page.get_by_label("Branch").fill(branch)
    page.locator('[name="base_ref"]').fill(base_ref)
    page.get_by_role("button", name="Start").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    attach = page.locator(".run-head code.copyable").inner_text()
    session = re.fullmatch(r"tmux -L (\S+) attach -t =(\S+)", attach)
    assert session, attach
    return RunPage(url=page.url, name=branch.rsplit("/", 1)[-1], tmux_session=session.group(2))


def branch_with(repo: Path, tmp: Path, name: str, files: dict[str, str]) -> None:
    """A branch off main with one commit, made beside the main checkout (never in it)."""
    where = tmp / f"wt-{name}"
    git(repo, "worktree", "add", "-q", "-b", name, str(where), "main")
    for rel, content in files.items():
        (where / rel).write_text(content)
    git(where, "add", "-A")
    git(where, "commit", "-q", "-m", f"{name} work")
    git(repo, "worktree", "remove", str(where))


def merge(changes: Any, into: str, mode: str, confirm: bool = False) -> Any:
    changes.locator("#merge-into").fill(into)
    changes.locator(f'#merge-form input[name="mode"][value="{mode}"]').check()
    box = changes.locator('#merge-form input[name="confirm"]')
    box.check() if confirm else box.uncheck()
    changes.get_by_role("button", name="Merge back").click()
    return changes.locator("#merge-note .ship-result")


def test_review_commit_push_and_merge_back_from_the_changes_page(
    context: Any, page: Any, lab_server: LabServer, tmp_path: Path
) -> None:
    repo = lab_server.repo
    git(repo, "branch", "-f", "ship-base", "main")
    git(repo, "branch", "-f", "ship-squash", "main")
    branch_with(repo, tmp_path, "ship-conflict", {"app.py": "theirs = True\n"})
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    # The forge's URL to fetch from, the bare repository to push to.
    git(repo, "remote", "add", "origin", "git@github.com:acme/app.git")
    git(repo, "remote", "set-url", "--push", "origin", str(bare))
    received: list[str] = []

    def receive(body: dict[str, Any]) -> Any:
        received.append(last_human_text(body))
        return text("REVIEW received.")

    lab_server.model.script.add(when(MARK, dynamic(receive)))
    try:
        run = start_from(page, repo, BRANCH, "ship-base")
        open_run(page, run)
        expect_state(page, "idle")
        wt = worktree_of(lab_server, run.name)
        (wt / "app.py").write_text("a = 1\nb = 2\nc = 3\n")

        changes = context.new_page()
        changes.goto(run.url + "changes/")
        rows = changes.locator('details.file[data-path="app.py"] tr[data-new]')
        expect(rows).to_have_count(3)
        # Two comments: a range (lines 1-2) and one line (3).
        rows.nth(0).locator(".line-pick").click()
        rows.nth(1).locator(".line-pick").click(modifiers=["Shift"])
        changes.get_by_label("Comment on app.py:1-2").fill(f"Rename a and b {MARK}")
        changes.get_by_role("button", name="Add comment").click()
        rows.nth(2).locator(".line-pick").click()
        changes.get_by_label("Comment on app.py:3").fill("Say why c")
        changes.get_by_role("button", name="Add comment").click()
        rows.nth(1).locator(".line-pick").click()
        changes.get_by_label("Comment on app.py:2").fill("Drop me")
        changes.get_by_role("button", name="Add comment").click()
        expect(changes.locator(".review-comment .place")).to_have_text(["app.py:1-2", "app.py:3", "app.py:2"])
        # Editable and removable in the tray, and kept across a reload until sent.
        changes.locator(".review-comment").nth(2).get_by_role("button", name="Remove").click()
        changes.get_by_label("Comment on app.py:3").fill("Say why c is 3")
        changes.reload()
        expect(changes.locator(".review-comment .place")).to_have_text(["app.py:1-2", "app.py:3"])
        expect(changes.get_by_label("Comment on app.py:3")).to_have_value("Say why c is 3")
        changes.get_by_role("button", name="Send comments to the agent").click()
        expect(changes.locator("#review-note")).to_have_text("Sent 2 comments as one message.")
        expect(changes.locator(".review-comment")).to_have_count(0)
        expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("REVIEW received.")
        [message] = received
        assert "`app.py:1-2`\n```diff\n+a = 1\n+b = 2\n```\nRename a and b" in message, message
        assert "`app.py:3`\n```diff\n+c = 3\n```\nSay why c is 3" in message, message

        # A commit from the page.
        changes.get_by_label("Commit message").fill("Add app.py from the page")
        changes.get_by_role("button", name="Commit", exact=True).click()
        expect(changes.locator("#commit-note")).to_contain_text("Add app.py from the page")
        expect(changes.locator(".commit .subject")).to_have_text(["Add app.py from the page"])
        tip = git(wt, "rev-parse", "HEAD")

        # A push that lands in the bare repository, and the pull request's link.
        changes.get_by_role("button", name="Push", exact=True).click()
        note = changes.locator("#push-note .ship-result")
        expect(note).to_contain_text(f"{BRANCH} -> {BRANCH}")
        assert git(bare, "rev-parse", f"refs/heads/{BRANCH}") == tip
        expect(note.locator("a.pr-link")).to_have_attribute(
            "href", "https://github.com/acme/app/compare/ship-base...lab%2Fbrowser-ship?expand=1"
        )
        expect(note).not_to_contain_text("Create pull request")  # no gh logged in here

        # Refused: the main checkout has main checked out with the operator's edit.
        (repo / "README.md").write_text("the operator's own edit\n")
        refused = merge(changes, "main", "ff", confirm=True)
        expect(refused).to_contain_text("uncommitted changes")
        expect(refused).to_contain_text("README.md")
        assert (repo / "README.md").read_text() == "the operator's own edit\n"
        git(repo, "checkout", "--", "README.md")
        # Refused: a conflict, with the file named.
        conflict = merge(changes, "ship-conflict", "squash")
        expect(conflict).to_contain_text("would conflict in:\n  app.py")
        # Squash, then fast-forward into the branch the run started from (the form's default).
        squashed = merge(changes, "ship-squash", "squash")
        expect(squashed).to_contain_text(f"Squashed {BRANCH} into ship-squash as ")
        assert git(repo, "show", "ship-squash:app.py") == "a = 1\nb = 2\nc = 3"
        assert git(repo, "rev-parse", "ship-squash^") == git(repo, "rev-parse", "main")
        changes.reload()
        expect(changes.locator("#merge-into")).to_have_value("ship-base")
        done = merge(changes, "ship-base", "ff")
        expect(done).to_contain_text(f"Fast-forwarded ship-base to {tip[:10]} (1 commit of {BRANCH}).")
        assert git(repo, "rev-parse", "ship-base") == tip
        screenshot(changes, "27-ship")
        changes.close()
    finally:
        git(repo, "remote", "remove", "origin")


def test_comments_sent_while_the_agent_works_reach_it_after_its_turn(
    context: Any, page: Any, lab_server: LabServer
) -> None:
    """The reply path's queueing: a review sent mid-turn waits for the turn, and arrives."""
    received: list[str] = []

    def receive(body: dict[str, Any]) -> Any:
        received.append(last_human_text(body))
        return text("QUEUED review received.")

    lab_server.model.script.add(
        when("SHIP-SLOW-41c", slow_text(10, 1.0)), when("QUEUED-MARK-8e1", dynamic(receive))
    )
    run = start_from(page, lab_server.repo, "lab/browser-ship-queue", "main")
    open_run(page, run)
    expect_state(page, "idle")
    (worktree_of(lab_server, run.name) / "q.py").write_text("q = 1\n")
    changes = context.new_page()
    try:
        changes.goto(run.url + "changes/")
        changes.locator('details.file[data-path="q.py"] .line-pick').first.click()
        changes.get_by_label("Comment on q.py:1").fill("QUEUED-MARK-8e1 name q better")
        changes.get_by_role("button", name="Add comment").click()
        send(page, "SHIP-SLOW-41c please")
        expect_state(page, "working")
        changes.get_by_role("button", name="Send comments to the agent").click()
        expect(changes.locator("#review-note")).to_have_text("Sent 1 comment as one message.")
        expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("QUEUED review received.")
        assert any("`q.py:1`" in m and "name q better" in m for m in received), received
    finally:
        changes.close()
