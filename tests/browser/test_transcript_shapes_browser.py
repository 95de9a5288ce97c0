"""Every entry shape a real 2.1.328 session writes, rendered in a real browser:
thinking, API errors and retries, a background agent (its line, the panel while it runs and
its own conversation), compaction, and each version of a revised plan. One screenshot per
shape in artifacts/browser/23-*.png. The real TUI answers from the scripted model; every wait
is on the DOM.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import (
    api_error,
    errors_then,
    slow_text,
    text,
    thinking,
    tool_use,
    when,
    write_plan,
)
from providers.claude_code.transcript import RETRYING
from tests.browser.conftest import LabServer, RunPage, screenshot, start_run

pytestmark = pytest.mark.browser

AGENT_TASK = "SHAPES-SUBTASK: read README.md and summarize it"


@pytest.fixture(scope="module")
def shapes_run(context: Any, lab_server: LabServer) -> RunPage:
    script = lab_server.model.script
    script.add(
        when("SHAPES-THINK", thinking("Weighing it.\n\nOption **A** is simpler.", "I pick option A.")),
        when(
            "SHAPES-FLAKY",
            # Three: the CLI waits about 2 s before the third retry, long enough to watch.
            errors_then(3, api_error(500, "api_error", "Internal server error"), text("Recovered.")),
        ),
        when(
            "SHAPES-AGENT",
            tool_use("Agent", {"description": "Read the readme", "prompt": AGENT_TASK}),
            text("Started a background agent."),
        ),
        # Last: after an error turn the CLI sends the failed prompt again with the next one
        # (one user message), so an earlier rule would match every later prompt.
        when("SHAPES-OVERLOADED", api_error(529, "overloaded_error", "Overloaded")),
    )
    # The subagent reads a file, then reports slowly, so the page can be seen while it runs.
    script.agents[AGENT_TASK] = [
        tool_use("Read", {"file_path": "README.md"}, text="Reading the README."),
        slow_text(["Subagent", "summary:", "the", "README", "is", "short."], 1.0),
    ]
    script.on_notification = text("The background agent finished.")
    p = context.new_page()
    try:
        return start_run(p, lab_server.repo, "lab/browser-shapes")
    finally:
        p.close()


def _open(page: Any, run: RunPage) -> None:
    page.goto(run.url)
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")


def _send(page: Any, message: str) -> None:
    box = page.locator("#composer textarea")
    box.fill(message)
    box.press("Enter")


def _idle(page: Any) -> None:
    expect(page.locator("#panel")).to_have_attribute("data-state", "idle")


def test_thinking_is_collapsed_and_labelled(page: Any, shapes_run: RunPage) -> None:
    _open(page, shapes_run)
    _send(page, "SHAPES-THINK please")
    thought = page.locator("li.msg-thinking details")
    expect(thought.locator("summary")).to_have_text("Thinking")
    expect(thought.locator(".md")).not_to_be_visible()  # collapsed
    reply = page.locator("li.msg-assistant_text").filter(has_text="I pick option A.")
    expect(reply).to_have_count(1)
    expect(page.locator("li.msg-assistant_text").filter(has_text="Weighing it")).to_have_count(0)
    thought.locator("summary").click()
    expect(thought.locator(".md strong")).to_have_text("A")
    _idle(page)
    screenshot(page, "23-thinking")


def test_a_long_turn_says_how_long_it_has_been_working(
    page: Any, shapes_run: RunPage, lab_server: LabServer
) -> None:
    words = [f"slowword{i}" for i in range(8)]
    lab_server.model.script.add(when("SHAPES-LONGTURN", slow_text(words, 1.0)))
    _open(page, shapes_run)
    _send(page, "SHAPES-LONGTURN please")
    activity = page.locator("#panel .activity")
    expect(activity).to_have_text(re.compile(r"^Working for [0-9] s$"))
    # The page counts on between transcript writes (none come while the reply streams).
    expect(activity).to_have_text(re.compile(r"^Working for ([3-9]|[1-5][0-9]) s$"))
    screenshot(page, "23-working-for")
    expect(page.locator("li.msg-assistant_text").filter(has_text="slowword7")).to_have_count(1)
    _idle(page)
    expect(activity).to_have_count(0)


def test_retries_are_one_line_and_a_counting_status_and_a_given_up_error_is_an_error(
    page: Any, shapes_run: RunPage
) -> None:
    _open(page, shapes_run)
    _send(page, "SHAPES-FLAKY please")
    # One line however many retries (a shown message never changes), and the working status
    # counts them as the CLI's terminal does.
    activity = page.locator("#panel .activity")
    expect(activity).to_contain_text("waiting on the API request, retry 2 (Claude Code gives up after 10")
    screenshot(page, "23-api-retrying")
    expect(page.locator("li.msg-assistant_text").filter(has_text="Recovered.")).to_have_count(1)
    retries = page.locator("li.msg-lifecycle.msg-error").filter(has_text="retrying it")
    expect(retries).to_have_count(1)
    expect(retries).to_have_text(RETRYING)
    _idle(page)
    _send(page, "SHAPES-OVERLOADED please")
    error = page.locator("li.msg-lifecycle.msg-error").filter(has_text="API Error: Repeated 529")
    expect(error).to_have_count(1)
    expect(page.locator("li.msg-assistant_text").filter(has_text="API Error")).to_have_count(0)
    _idle(page)
    screenshot(page, "23-api-errors")


def test_a_background_agent_is_shown_running_then_finished_and_its_conversation_opens(
    page: Any, shapes_run: RunPage
) -> None:
    _open(page, shapes_run)
    before = page.locator("li.msg-user_text").count()
    _send(page, "SHAPES-AGENT please")
    running = page.locator("#panel .background")
    expect(running).to_have_text("A background agent is running: “Read the readme”")
    screenshot(page, "23-agent-running")
    done = page.locator("li.msg-lifecycle").filter(has_text='Agent "Read the readme" finished')
    expect(done).to_contain_text("Subagent summary: the README is short.")
    expect(running).to_have_count(0)
    answer = page.locator("li.msg-assistant_text").filter(has_text="The background agent finished.")
    expect(answer).to_have_count(1)
    # The notification is the agent's turn: no operator prompt was added for it, no raw XML.
    expect(page.locator("li.msg-user_text")).to_have_count(before + 1)
    expect(page.locator("#transcript")).not_to_contain_text("<task-notification>")
    _idle(page)
    screenshot(page, "23-agent-finished")
    done.get_by_role("link", name="Open the agent's conversation").click()
    expect(page.get_by_role("heading", name="A background agent of browser-shapes")).to_be_visible()
    side = page.locator("#transcript")
    expect(side.locator("li.msg-user_text")).to_have_text(AGENT_TASK)
    expect(side.locator("li.msg-tool_use .tool-name")).to_have_text("Read")
    expect(side.locator("li.msg-assistant_text").last).to_have_text("Subagent summary: the README is short.")
    screenshot(page, "23-agent-conversation")


def test_compaction_is_a_boundary_with_a_collapsed_summary(page: Any, shapes_run: RunPage) -> None:
    _open(page, shapes_run)
    page.locator("#composer textarea").fill("/compact")
    page.get_by_role("button", name="Send").click()  # Enter would pick from the command menu
    boundary = page.locator("li.msg-lifecycle").filter(has_text="Conversation compacted (/compact)")
    expect(boundary).to_have_count(1)
    summary = page.locator("li.msg-lifecycle details").filter(has_text="Summary of the conversation")
    expect(summary.locator(".md")).not_to_be_visible()
    summary.locator("summary").click()
    expect(summary.locator(".md")).to_contain_text("The user greeted the assistant")
    _idle(page)
    screenshot(page, "23-compaction")


def test_each_version_of_a_revised_plan_is_in_the_history(
    page: Any, context: Any, lab_server: LabServer
) -> None:
    lab_server.model.script.add(
        when(
            "SHAPES-PLAN",
            tool_use("ToolSearch", {"query": "select:ExitPlanMode", "max_results": 1}),
            write_plan("# First plan\n\n1. Create hello.txt\n"),
            tool_use("ExitPlanMode", {}, text="Here is my plan."),
            write_plan("# Revised plan\n\n1. Create hello.txt\n2. Test it\n"),
            tool_use("ExitPlanMode", {}, text="Here is the revised plan."),
            text("Revised plan approved."),
        )
    )
    run = start_run(page, lab_server.repo, "lab/browser-plan-history", options={"permission_mode": "plan"})
    _open(page, run)
    _send(page, "SHAPES-PLAN please")
    form = page.locator("#dialog form.dialog-plan")
    expect(form).to_be_visible()
    form.locator('input[name="answers-0-text"]').fill("Please add a test step")
    form.get_by_role("button", name="Reject with feedback").click()
    plans = page.locator("li.msg-tool_use details[open] .tool-detail h1")
    expect(plans).to_have_text(["First plan", "Revised plan"])
    expect(page.locator("#dialog form.dialog-plan")).to_be_visible()
    screenshot(page, "23-plan-versions")
