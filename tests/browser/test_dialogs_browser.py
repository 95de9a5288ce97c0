"""Dialogs answered from Chromium against the real Claude Code TUI and the scripted model:
a two-question AskUserQuestion form, and a plan approved by its button in a
run started in plan mode. What counts is what the CLI recorded: the tool_result the page
renders from the transcript.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import ask_user_question, plan_turns, text, tool_use, when
from tests.browser.conftest import LabServer, RunPage, screenshot
from tests.browser.test_chat_browser import (
    assert_contiguous,
    expect_state,
    open_run,
    send,
    transcript,
    wait_until,
)

pytestmark = pytest.mark.browser

# The same two questions as compat/claude_code/tests/test_live_dialogs.py (TWO).
TWO = [
    {
        "question": "Which fruit do you want?",
        "header": "Fruit",
        "options": [{"label": "Apple", "description": "Crunchy"}, {"label": "Banana", "description": "Soft"}],
        "multiSelect": False,
    },
    {
        "question": "Which drink do you want?",
        "header": "Drink",
        "options": [{"label": "Tea", "description": "Hot"}, {"label": "Juice", "description": "Cold"}],
        "multiSelect": False,
    },
]
PLAN = "# Browser plan\n\n1. Create hello.txt\n2. Write hello into it\n"


def expect_question_state(page: Any) -> None:
    """While a dialog waits, the panel's state is question; its badge says the provider asks."""
    expect(page.locator("#panel")).to_have_attribute("data-state", "question")
    badge = page.locator("#panel .badge")
    expect(badge).to_have_class(re.compile(r"\bstate-question\b"))
    expect(badge).to_have_text("Claude Code asks")


# Records every answered note the page shows (in #dialog-note, which only the answer's response
# writes; a note stays hidden while a dialog is offered).
ANSWERED_PROBE = """() => {
  window.__answered = [];
  new MutationObserver(() => {
    document.querySelectorAll("#dialog-note .dialog-answered").forEach((el) => {
      if (!el.checkVisibility()) return;
      const said = el.textContent.replace(/\\s+/g, " ").trim();
      if (!window.__answered.includes(said)) window.__answered.push(said);
    });
  }).observe(document.body, { childList: true, subtree: true, attributes: true });
}"""


def answer_and_see_the_note(page: Any, submit: Any) -> tuple[str, str]:
    """Click `submit`; return the answered note the page showed (it must be the one the server
    sent), and the form data the click posted."""
    page.evaluate(ANSWERED_PROBE)
    with page.expect_response(lambda r: "/answer" in r.url, timeout=90_000) as info:
        submit.click()
    response = info.value
    assert response.status == 200, response.text()
    sent = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.text())).strip()
    assert sent.startswith("Answer sent"), sent
    # The answer is verified before its response returns, so the push that removes the form
    # usually lands first: the page must still show the note.
    page.wait_for_function("() => window.__answered.length > 0", timeout=10_000)
    [note] = page.evaluate("window.__answered")
    assert re.sub(r"\s+", " ", note) == re.sub(r"\s+", " ", sent), (note, sent)
    return note, response.request.post_data or ""


BACKSTOP = re.compile("lab sent|different answer|lab allowed|lab denied|lab approved")
PHONE = {"width": 390, "height": 844}


def fits_a_phone(page: Any, name: str) -> None:
    """At 390×844 the dialog renders without horizontal scrolling (the page's own width)."""
    size = page.viewport_size
    page.set_viewport_size(PHONE)
    try:
        expect(page.locator("#dialog form")).to_be_visible()
        page.wait_for_function("() => document.documentElement.clientWidth === 390")
        wide = page.evaluate("() => document.documentElement.scrollWidth")
        assert wide <= 390, f"the page scrolls sideways at 390 px: {wide} px wide"
        overflowing = page.evaluate(
            """() => [...document.querySelectorAll('#dialog *')]
                 .filter((el) => el.getBoundingClientRect().right > 390.5)
                 .map((el) => el.tagName + '.' + el.className)"""
        )
        assert overflowing == [], overflowing
        screenshot(page, name)
    finally:
        page.set_viewport_size(size)


def prompt_mode(lab_server: LabServer, prompt: str) -> str:
    """The permissionMode the CLI recorded with the user entry of `prompt`."""
    for path in (lab_server.home / ".claude" / "projects").glob("*/*.jsonl"):
        for line in path.read_text(errors="replace").splitlines():
            if f'"content":"{prompt}"' in line and '"permissionMode"' in line:
                return str(json.loads(line)["permissionMode"])
    return ""


# Form controls a screen reader would name by nothing (a placeholder is not a label).
UNLABELLED = """() => [...document.querySelectorAll(
    'main input:not([type=hidden]), main textarea, main select, main button, main [role=listbox]')]
  .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
    && !el.getAttribute('aria-labelledby') && !(el.tagName === 'BUTTON' && el.textContent.trim()))
  .map((el) => el.outerHTML.slice(0, 120))"""


def tool_result(page: Any, needle: str) -> Any:
    return page.locator("#transcript li.msg-tool_result", has_text=needle)


def test_a_two_question_form_is_answered_from_the_browser(
    page: Any, chat_run: RunPage, lab_server: LabServer
) -> None:
    lab_server.model.script.add(
        when("ASK2-BROWSER", ask_user_question(questions=TWO), text("Two answers, thanks."))
    )
    open_run(page, chat_run)
    expect_state(page, "idle")
    page.evaluate("window.__noReload = true")
    before = transcript(page)

    send(page, "ASK2-BROWSER please")
    form = page.locator("#dialog form.dialog-question")
    expect(form).to_be_visible()
    expect_question_state(page)
    # Said to a screen reader, and the keyboard is brought to it (the composer was empty).
    expect(page.locator("#dialog-announce")).to_have_text(
        re.compile(r"^Claude Code asks 2 questions: Fruit\s+Which fruit do you want\?$")
    )
    expect(page.locator("#dialog-heading")).to_be_focused()
    assert page.evaluate(UNLABELLED) == []
    fieldsets = form.locator("fieldset")
    expect(fieldsets).to_have_count(2)
    expect(fieldsets.nth(0).locator("legend")).to_have_text(re.compile(r"Fruit\s+Which fruit do you want\?"))
    expect(fieldsets.nth(1).locator("legend")).to_have_text(re.compile(r"Drink\s+Which drink do you want\?"))
    expect(fieldsets.nth(0).locator("label.option", has_text="Banana")).to_contain_text("Soft")
    expect(form.locator('input[type="radio"][name="answers-0"]')).to_have_count(2)
    expect(form.locator('input[type="radio"][name="answers-1"]')).to_have_count(2)
    expect(form.locator('input[type="hidden"][name="count"]')).to_have_value("2")
    expect(page.locator("#composer textarea")).to_be_enabled()
    screenshot(page, "5-two-questions")

    # Banana for the first, Tea for the second; one Answer for both.
    banana = fieldsets.nth(0).locator("label.option", has_text="Banana").locator("input[type=radio]")
    tea = fieldsets.nth(1).locator("label.option", has_text="Tea").locator("input[type=radio]")
    banana.check()
    tea.check()
    expect(banana).to_have_value("1")
    expect(tea).to_have_value("0")
    note, posted = answer_and_see_the_note(page, form.get_by_role("button", name="Answer", exact=True))
    assert "answers-0=1" in posted and "answers-1=0" in posted and "decline" not in posted, posted

    # The answered summary replaced the form, and the keyboard is back in the composer...
    assert note.startswith("Answer sent. You chose: Banana · Tea."), note
    expect(page.locator("#dialog form")).to_have_count(0)
    expect(page.locator("#composer textarea")).to_be_focused()
    # ...and the transcript renders what the CLI recorded, then the model's next turn.
    recorded = tool_result(page, "Your questions have been answered")
    expect(recorded).to_have_count(1)
    expect(recorded).to_contain_text('"Which fruit do you want?"="Banana"')
    expect(recorded).to_contain_text('"Which drink do you want?"="Tea"')
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("Two answers, thanks.")
    expect_state(page, "idle")
    # The turn the answer went to has ended: "Answer sent" is done.
    expect(page.locator("#dialog-note .dialog-answered")).to_have_count(0)
    expect(page.locator("#transcript .msg-lifecycle", has_text=BACKSTOP)).to_have_count(0)
    assert page.evaluate("window.__noReload") is True, "the page reloaded"
    after = transcript(page)
    assert after[: len(before)] == before
    assert_contiguous(after)
    screenshot(page, "5-two-questions-answered")


def test_a_plan_is_approved_from_the_browser(page: Any, plan_run: RunPage, lab_server: LabServer) -> None:
    lab_server.model.script.add(
        when("PLAN-BROWSER", plan_turns(PLAN, after="Plan approved, reviewing edits."))
    )
    open_run(page, plan_run)
    expect_state(page, "idle")
    page.evaluate("window.__noReload = true")

    send(page, "PLAN-BROWSER please")
    form = page.locator("#dialog form.dialog-plan")
    expect(form).to_be_visible()
    expect_question_state(page)
    # The plan, rendered as Markdown, above the buttons and the feedback field.
    expect(form.locator(".plan.md h1")).to_have_text("Browser plan")
    expect(form.locator(".plan.md li")).to_have_text(["Create hello.txt", "Write hello into it"])
    expect(form.locator('input[name="answers-0-text"]')).to_be_visible()
    buttons = form.locator(".buttons button")
    expect(buttons).to_have_count(4)
    # The first button (the primary one) is the safest approve, never auto mode.
    expect(buttons.first).to_have_text("Approve — ask before each action")
    approve = form.get_by_role("button", name="Approve — ask before each action")
    expect(approve).to_be_visible()
    expect(form.get_by_role("button", name="Approve — switch to auto mode")).to_be_visible()
    screenshot(page, "5-plan")
    fits_a_phone(page, "5-plan-phone")

    note, posted = answer_and_see_the_note(page, approve)
    assert "answers-0=1" in posted, posted  # row 1: approve, then ask before each action
    assert note.startswith("Answer sent."), note
    # The CLI recorded the approval (the ExitPlanMode tool_result), and the model went on.
    expect(tool_result(page, "User has approved your plan")).to_have_count(1)
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text(
        "Plan approved, reviewing edits."
    )
    expect_state(page, "idle")
    expect(page.locator("#dialog form")).to_have_count(0)
    expect(page.locator("#transcript .msg-lifecycle", has_text=BACKSTOP)).to_have_count(0)
    assert page.evaluate("window.__noReload") is True, "the page reloaded"
    assert lab_server.transcript_contains("User has approved your plan")
    assert_contiguous(transcript(page))
    screenshot(page, "5-plan-approved")
    # The mode the button promised: the next prompt is recorded in manual ("default") mode.
    send(page, "PLAN-MODE-CHECK")
    expect_state(page, "idle")
    wait_until(
        lambda: (
            lab_server.transcript_contains('"content":"PLAN-MODE-CHECK"')
            and prompt_mode(lab_server, "PLAN-MODE-CHECK") == "default"
        ),
        "the next prompt recorded in default mode",
    )


def test_a_tool_permission_is_allowed_and_denied_from_the_browser(
    page: Any, chat_run: RunPage, lab_server: LabServer, tmp_path: Path
) -> None:
    allowed = tmp_path / f"allowed-{uuid.uuid4().hex[:8]}"
    denied = tmp_path / f"denied-{uuid.uuid4().hex[:8]}"
    make = tool_use("Bash", {"command": f"touch {allowed}", "description": "Make a file"})
    other = tool_use("Bash", {"command": f"touch {denied}", "description": "Make another"})
    lab_server.model.script.add(
        when("BASH-ALLOW", make, text("allowed done")), when("BASH-DENY", other, text("denied done"))
    )
    open_run(page, chat_run)
    expect_state(page, "idle")
    page.evaluate("window.__noReload = true")

    send(page, "BASH-ALLOW please")
    form = page.locator("#dialog form.dialog-approval")
    expect(form).to_be_visible(timeout=60_000)
    # needs_input, with what is asked: the tool, the reason, the command; the CLI's own options.
    expect(page.locator("#panel")).to_have_attribute("data-state", "needs_input")
    expect(page.locator("#panel .badge")).to_have_text("Claude Code needs input")
    expect(form.locator(".prompt")).to_contain_text("Bash")
    expect(form.locator(".prompt")).to_contain_text("Make a file")
    expect(form.locator("pre.asked")).to_have_text(f"touch {allowed}")
    expect(form.get_by_role("button", name="Allow once")).to_be_visible()
    expect(form.get_by_role("button", name="Deny", exact=True)).to_be_visible()
    expect(form.get_by_role("button", name="Deny, and tell Claude what to do differently")).to_be_visible()
    screenshot(page, "6-approval")
    fits_a_phone(page, "6-approval-phone")
    assert not allowed.exists()  # nothing runs before the click

    note, posted = answer_and_see_the_note(page, form.get_by_role("button", name="Allow once"))
    assert "answers-0=0" in posted and note.startswith("Answer sent. You chose: Allow once."), (note, posted)
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("allowed done")
    expect_state(page, "idle")
    assert allowed.exists()

    send(page, "BASH-DENY please")
    form = page.locator("#dialog form.dialog-approval")
    expect(form.locator("pre.asked")).to_have_text(f"touch {denied}", timeout=60_000)
    form.locator('input[name="answers-0-text"]').fill("do not make it")
    _, posted = answer_and_see_the_note(
        page, form.get_by_role("button", name="Deny, and tell Claude what to do differently")
    )
    assert parse_qs(posted)["answers-0-text"] == ["do not make it"], posted
    expect(tool_result(page, "do not make it")).to_have_count(1)
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("denied done")
    expect_state(page, "idle")
    assert not denied.exists()
    expect(page.locator("#transcript .msg-lifecycle", has_text=BACKSTOP)).to_have_count(0)
    assert page.evaluate("window.__noReload") is True, "the page reloaded"
    assert_contiguous(transcript(page))


def worktree_of(lab_server: LabServer, branch: str) -> Path:
    out = subprocess.run(
        ["git", "-C", str(lab_server.repo), "worktree", "list", "--porcelain"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for block in out.split("\n\n"):
        lines = dict(line.split(" ", 1) for line in block.splitlines() if " " in line)
        if lines.get("branch") == f"refs/heads/{branch}":
            return Path(lines["worktree"])
    raise AssertionError(f"no worktree for {branch}: {out}")


def click_in_approval(page: Any, expected_body: str, button: str) -> str:
    """Wait for the approval whose detail is `expected_body`, click `button`; the posted form."""
    form = page.locator("#dialog form.dialog-approval")
    expect(form.locator("pre.asked")).to_have_text(expected_body, timeout=60_000)
    expect(page.locator("#panel")).to_have_attribute("data-state", "needs_input")
    _, posted = answer_and_see_the_note(page, form.get_by_role("button", name=button, exact=True))
    return posted


def test_write_and_edit_permissions_are_allowed_and_denied_from_the_browser(
    page: Any, chat_run: RunPage, lab_server: LabServer
) -> None:
    wt = worktree_of(lab_server, "lab/browser-chat")
    tag = uuid.uuid4().hex[:8]
    created, refused, edited = wt / f"created-{tag}.txt", wt / f"refused-{tag}.txt", wt / f"edited-{tag}.txt"
    edited.write_text("alpha\nbeta\ngamma\n")
    change = {"file_path": str(edited), "old_string": "beta", "new_string": "BETA"}
    write_ok = tool_use("Write", {"file_path": str(created), "content": "made\n"})
    write_no = tool_use("Write", {"file_path": str(refused), "content": "no\n"})
    lab_server.model.script.add(
        when(f"W-OK-{tag}", write_ok, text("write ok")),
        when(f"W-NO-{tag}", write_no, text("write no")),
        when(f"E-NO-{tag}", tool_use("Edit", change), text("edit no")),
        when(f"E-OK-{tag}", tool_use("Edit", change), text("edit ok")),
    )
    open_run(page, chat_run)
    expect_state(page, "idle")
    last = page.locator("#transcript .msg-assistant_text").last

    send(page, f"W-OK-{tag}")
    click_in_approval(page, "made", "Allow once")
    expect(last).to_have_text("write ok")
    assert created.read_text() == "made\n"

    send(page, f"W-NO-{tag}")
    click_in_approval(page, "no", "Deny")
    expect_state(page, "idle")
    assert not refused.exists()

    diff = re.compile(r"-beta\s*\+BETA")
    send(page, f"E-NO-{tag}")
    form = page.locator("#dialog form.dialog-approval")
    expect(form.locator("pre.asked")).to_have_text(diff, timeout=60_000)
    expect(form.locator(".prompt")).to_contain_text(f"edited-{tag}.txt")
    form.locator('input[name="answers-0-text"]').fill("leave it lowercase")
    answer_and_see_the_note(
        page, form.get_by_role("button", name="Deny, and tell Claude what to do differently")
    )
    expect(last).to_have_text("edit no")
    assert edited.read_text() == "alpha\nbeta\ngamma\n"

    send(page, f"E-OK-{tag}")
    expect(page.locator("#dialog form.dialog-approval pre.asked")).to_have_text(diff, timeout=60_000)
    answer_and_see_the_note(page, page.locator("#dialog form").get_by_role("button", name="Allow once"))
    expect(last).to_have_text("edit ok")
    assert edited.read_text() == "alpha\nBETA\ngamma\n"
    expect(page.locator("#transcript .msg-lifecycle", has_text=BACKSTOP)).to_have_count(0)
    expect_state(page, "idle")
