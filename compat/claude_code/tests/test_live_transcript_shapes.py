"""Live: the entry shapes of everyday sessions (compat §13), through lab's production adapter
against the real 2.1.328 TUI and the scripted model: thinking, API errors and the CLI's own
retries, compaction, and a background agent with its own transcript. Every wait is on the
transcript (read by the adapter), with generous deadlines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compat.adapter import AdapterRun
from compat.claude_code.adapter import spawn_adapter_run
from compat.claude_code.scripted_model import (
    api_error,
    context_full,
    errors_then,
    slow_text,
    text,
    thinking,
    tool_use,
    when,
)
from providers.claude_code.transcript import RETRYING
from providers.schema import Cursor, MessageKind, RunState
from providers.tmux import Tmux

pytestmark = pytest.mark.live

K = MessageKind
AGENT_TASK = "LIVE-SUBTASK: read README.md and summarize it"


def _idle_after(run: AdapterRun, kind: MessageKind, needle: str) -> bool:
    return any(needle in m.text for m in run.messages if m.kind == kind) and run.last.state == RunState.IDLE


def test_thinking_is_its_own_message_before_the_reply(scripted_model, live_run):
    scripted_model.script.add(when("THINK", thinking("Weighing it.", "I pick option A.")))
    live_run.provider.reply(live_run.handle, "THINK please")
    live_run.wait(lambda r: _idle_after(r, K.ASSISTANT_TEXT, "I pick option A."), what="the reply")
    assert [(m.kind, m.text) for m in live_run.messages[1:]] == [
        (K.THINKING, "Weighing it."),
        (K.ASSISTANT_TEXT, "I pick option A."),
    ]


def test_a_retried_request_is_one_line_and_a_recovered_request_replies(scripted_model, live_run):
    scripted_model.script.add(
        when(
            "FLAKY", errors_then(2, api_error(500, "api_error", "Internal server error"), text("Recovered."))
        )
    )
    live_run.provider.reply(live_run.handle, "FLAKY please")
    live_run.wait(lambda r: _idle_after(r, K.ASSISTANT_TEXT, "Recovered."), 120, "the reply after retries")
    assert [(m.kind, m.is_error, m.text) for m in live_run.messages[1:]] == [
        (K.LIFECYCLE, True, RETRYING),
        (K.ASSISTANT_TEXT, False, "Recovered."),
    ]
    assert [e.get("error_status") for e in scripted_model.turn_requests()] == [500, 500, None]


def test_an_error_the_cli_gives_up_on_is_an_error_line_and_the_run_goes_idle(scripted_model, live_run):
    scripted_model.script.add(when("OVERLOADED", api_error(529, "overloaded_error", "Overloaded")))
    live_run.provider.reply(live_run.handle, "OVERLOADED please")
    live_run.wait(lambda r: _idle_after(r, K.LIFECYCLE, "API Error: Repeated 529"), 120, "the error")
    assert not live_run.texts(K.ASSISTANT_TEXT)
    assert live_run.messages[-1].is_error
    # compat §13: 2.1.328 gives up on 529 after three attempts, each one an api-request entry;
    # the retrying is one line.
    assert live_run.texts(K.LIFECYCLE)[:-1] == [RETRYING]
    assert len(scripted_model.turn_requests()) == 3


def test_a_rejected_key_is_retried_under_one_line_and_a_status_that_counts(
    scripted_model, adapter_settings, claude_home, tmp_path
):
    # The case, shortened: the CLI retries a 401 ("invalid x-api-key") up to
    # CLAUDE_CODE_MAX_RETRIES times (here 3, through lab's own LAB_AGENT_ENV).
    adapter_settings.LAB_AGENT_ENV = {**adapter_settings.LAB_AGENT_ENV, "CLAUDE_CODE_MAX_RETRIES": "3"}
    scripted_model.script.add(when("KEY", api_error(401, "authentication_error", "invalid x-api-key")))
    run = spawn_adapter_run(tmp_path, claude_home.worktree)
    statuses: list[str] = []

    def gave_up(r: AdapterRun) -> bool:
        if r.last and r.last.running and r.last.running not in statuses:
            statuses.append(r.last.running)
        return _idle_after(r, K.LIFECYCLE, "Invalid API key")

    try:
        run.provider.reply(run.handle, "KEY please")
        run.wait(gave_up, 120, "the error the CLI gave up with")
    finally:
        Tmux(run.handle.tmux_socket).kill_server()
    assert [(m.kind, m.is_error) for m in run.messages[1:]] == [(K.LIFECYCLE, True), (K.LIFECYCLE, True)]
    assert run.messages[1].text == RETRYING
    assert [e.get("error_status") for e in scripted_model.turn_requests()] == [401] * 4
    # Polled every 50 ms: the first retries (0.5 s and more apart) are seen, in order; the
    # last one's error comes within milliseconds (the fixture test reads every count). None
    # is past the CLI's last.
    counts = [int(s.removeprefix("the API request, retry ").partition(" ")[0]) for s in statuses]
    assert counts[:2] == [1, 2] and counts == sorted(set(counts)) and counts[-1] <= 3


def test_compaction_is_a_boundary_and_a_summary_and_the_conversation_goes_on(scripted_model, live_run):
    scripted_model.script.add(when("hello", text("Hello back.")), when("after", text("Still here.")))
    live_run.provider.reply(live_run.handle, "hello there")
    live_run.wait(lambda r: _idle_after(r, K.ASSISTANT_TEXT, "Hello back."), what="the first reply")
    path = live_run.path
    live_run.provider.reply(live_run.handle, "/compact")  # the command echo is the receipt
    live_run.wait(lambda r: "Compacted" in r.texts(K.LIFECYCLE), 120, "the compaction")
    lifecycle = [m for m in live_run.messages if m.kind == K.LIFECYCLE]
    assert lifecycle[0].text == "Conversation compacted (/compact)"
    assert lifecycle[1].detail == "Summary:\n" + scripted_model.compact_summary
    assert live_run.last.state == RunState.IDLE
    live_run.provider.reply(live_run.handle, "after compaction")
    live_run.wait(lambda r: _idle_after(r, K.ASSISTANT_TEXT, "Still here."), what="a reply after it")
    assert live_run.path == path  # compat §13: the transcript stays one file


def test_a_full_context_is_compacted_automatically_before_the_next_reply(scripted_model, live_run):
    scripted_model.script.add(
        when("FILL", context_full("A very long answer.")), when("next", text("Answered after it."))
    )
    live_run.provider.reply(live_run.handle, "FILL the context")
    live_run.wait(lambda r: _idle_after(r, K.ASSISTANT_TEXT, "A very long answer."), what="the first reply")
    live_run.provider.reply(live_run.handle, "next prompt")
    live_run.wait(lambda r: _idle_after(r, K.ASSISTANT_TEXT, "Answered after it."), 120, "the reply")
    assert [(m.kind, m.text) for m in live_run.messages[2:5]] == [
        (K.USER_TEXT, "next prompt"),
        (K.LIFECYCLE, "Conversation compacted (automatically, the context was full)"),
        (K.LIFECYCLE, "Summary of the conversation before it was compacted"),
    ]
    assert [e["kind"] for e in scripted_model.requests if e.get("kind") in ("turn", "compaction")] == [
        "turn",
        "compaction",
        "turn",
    ]


def test_a_background_agent_runs_reports_and_its_own_transcript_reads(scripted_model, live_run):
    script = scripted_model.script
    script.add(
        when(
            "AGENT",
            tool_use("Agent", {"description": "Read the readme", "prompt": AGENT_TASK}),
            text("Started a background agent."),
        )
    )
    script.agents[AGENT_TASK] = [
        tool_use("Read", {"file_path": "README.md"}, text="Reading the README."),
        slow_text(["Subagent", "summary:", "it", "is", "short."], 1.0),
    ]
    script.on_notification = text("The background agent finished.")
    live_run.provider.reply(live_run.handle, "AGENT please")
    live_run.wait(lambda r: r.last.background == ("Read the readme",), 60, "the agent running")
    launch = next(m for m in live_run.messages if m.kind == K.TOOL_RESULT)
    assert launch.text == "Agent “Read the readme” is working in the background" and launch.side
    live_run.wait(lambda r: _idle_after(r, K.ASSISTANT_TEXT, "The background agent finished."), 120)
    assert live_run.last.background == ()
    done = next(m for m in live_run.messages if m.kind == K.LIFECYCLE)
    assert done.text == 'Agent "Read the readme" finished: Subagent summary: it is short.'
    assert done.side == launch.side
    assert live_run.texts(K.USER_TEXT) == ["AGENT please"]  # the notification is not the operator's
    # compat §13: the agent's own transcript, beside the session's, read with the same reader.
    side = live_run.provider.side_transcript(live_run.handle, done.side)
    assert Path(side).parent.name == "subagents"
    read = live_run.provider.read_transcript(side, Cursor())
    assert [(m.kind, m.tool_name) for m in read.messages] == [
        (K.USER_TEXT, ""),
        (K.ASSISTANT_TEXT, ""),
        (K.TOOL_USE, "Read"),
        (K.TOOL_RESULT, "Read"),
        (K.ASSISTANT_TEXT, ""),
    ]
    assert read.messages[0].text == AGENT_TASK
    assert live_run.provider.side_transcript(live_run.handle, "../../etc") == ""
