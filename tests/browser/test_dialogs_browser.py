"""Dialogs answered from Chromium against the real Claude Code TUI and the scripted model
(issue 5 item 7): a two-question AskUserQuestion form, and a plan approved by its button in a
run started in plan mode. What counts is what the CLI recorded: the tool_result the page
renders from the transcript.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from compat.scripted_model import ask_user_question, plan_turns, text, when
from tests.browser.conftest import LabServer, RunPage, screenshot
from tests.browser.test_chat_browser import assert_contiguous, expect_state, open_run, send, transcript

pytestmark = pytest.mark.browser

# The same two questions as compat/tests/test_live_dialogs.py (TWO).
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


# Records every answered note the dialog area shows: the state push that follows an answer
# re-renders the panel (and the dialog area with it), so the note may be short-lived.
ANSWERED_PROBE = """() => {
  window.__answered = [];
  new MutationObserver(() => {
    document.querySelectorAll("#dialog .dialog-answered").forEach((el) => {
      const said = el.textContent.replace(/\\s+/g, " ").trim();
      if (!window.__answered.includes(said)) window.__answered.push(said);
    });
  }).observe(document.body, { childList: true, subtree: true });
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
    # The note is transient (the next state push re-renders the dialog area), so the probe
    # records it when it appears. The answer is verified before its response returns, so the
    # push that removes the form usually lands first: the page must still show the note.
    page.wait_for_function("() => window.__answered.length > 0", timeout=10_000)
    [note] = page.evaluate("window.__answered")
    assert re.sub(r"\s+", " ", note) == re.sub(r"\s+", " ", sent), (note, sent)
    return note, response.request.post_data or ""


BACKSTOP = re.compile("lab sent|different answer")


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

    # The answered summary replaced the form...
    assert note.startswith("Answer sent. You chose: Banana · Tea."), note
    expect(page.locator("#dialog form")).to_have_count(0)
    # ...and the transcript renders what the CLI recorded, then the model's next turn.
    recorded = tool_result(page, "Your questions have been answered")
    expect(recorded).to_have_count(1)
    expect(recorded).to_contain_text('"Which fruit do you want?"="Banana"')
    expect(recorded).to_contain_text('"Which drink do you want?"="Tea"')
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("Two answers, thanks.")
    expect_state(page, "idle")
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
    approve = form.get_by_role("button", name="Approve — review each edit")
    expect(approve).to_be_visible()
    expect(form.get_by_role("button", name="Approve — auto-accept edits")).to_be_visible()
    screenshot(page, "5-plan")

    note, posted = answer_and_see_the_note(page, approve)
    assert "answers-0=1" in posted, posted  # row 1: approve, each edit reviewed
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
