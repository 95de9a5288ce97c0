"""providers.claude_code.transcript: every mapping rule, on small 2.1.328-shaped lines."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from providers.claude_code import transcript
from providers.claude_code.dialogs import (
    PLAN_APPROVE_AUTO,
    PLAN_APPROVE_MANUAL,
    PLAN_OPTIONS,
    PLAN_REJECT_FEEDBACK,
    PLAN_REJECT_REFINE,
    Intent,
    PlanDecision,
    intent_for,
)
from providers.claude_code.tests import entries as E
from providers.claude_code.transcript import ClaudeState, read_transcript
from providers.errors import TranscriptUnreadable
from providers.schema import Answer, Cursor, DialogKind, MessageKind, RunState, TranscriptRead

K = MessageKind


class Log:
    """A transcript file the test appends to, read incrementally like the watcher does."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cursor = Cursor()
        path.touch()

    def add(self, *items: dict[str, Any] | bytes) -> Log:
        with open(self.path, "ab") as f:
            for item in items:
                f.write(item if isinstance(item, bytes) else E.line(item))
        return self

    def read(self, intents: Mapping[str, Intent] | None = None, **kw: Any) -> TranscriptRead:
        result = read_transcript(str(self.path), self.cursor, intents, **kw)
        self.cursor = result.cursor
        return result


@pytest.fixture
def log(tmp_path: Path) -> Log:
    return Log(tmp_path / "session.jsonl")


def kinds_texts(result: TranscriptRead) -> list[tuple[MessageKind, str]]:
    return [(m.kind, m.text) for m in result.messages]


# -- user text ----------------------------------------------------------------------------


def test_a_typed_prompt_is_user_text_and_starts_work(log: Log) -> None:
    entry = E.prompt("hello world")
    result = log.add(entry).read()
    assert kinds_texts(result) == [(K.USER_TEXT, "hello world")]
    message = result.messages[0]
    assert message.seq == 0
    assert message.native_id == entry["uuid"]
    assert message.timestamp == E.TS
    assert result.state == RunState.WORKING


def test_text_blocks_are_user_text(log: Log) -> None:
    result = log.add(E.user([E.text("from a block")])).read()
    assert kinds_texts(result) == [(K.USER_TEXT, "from a block")]


def test_a_pasted_wrapper_is_stripped(log: Log) -> None:
    content = '\n\n<pasted_content id="fcff">\nLine 1\nLine 2\n</pasted_content id="fcff">\n'
    result = log.add(E.prompt(content)).read()
    assert kinds_texts(result) == [(K.USER_TEXT, "Line 1\nLine 2")]


def test_a_queued_prompt_is_user_text(log: Log) -> None:
    result = log.add(E.prompt("follow-up", promptSource="queued")).read()
    assert kinds_texts(result) == [(K.USER_TEXT, "follow-up")]
    assert result.state == RunState.WORKING


def test_meta_entries_are_not_human_text(log: Log) -> None:
    result = log.add(E.caveat(), E.meta("## Context Usage\n\n**Model:** x")).read()
    assert result.messages == []
    assert result.state == RunState.IDLE


def test_queue_operations_track_delivery_without_messages(log: Log) -> None:
    log.add({"type": "queue-operation", "operation": "enqueue", "content": "queued msg"})
    first = log.read()
    assert first.messages == []
    assert first.cursor.provider_state.queued == ("queued msg",)
    assert first.stats["queue_enqueue"] == 1
    log.add({"type": "queue-operation", "operation": "dequeue"})
    second = log.read()
    assert second.cursor.provider_state.queued == ()
    assert second.stats["queue_dequeue"] == 1


# -- local commands (compat §6) -----------------------------------------------------------


def test_a_fresh_transcript_with_only_the_clear_echo_is_idle(log: Log) -> None:
    log.add(E.bookkeeping("mode"), E.bookkeeping("file-history-snapshot"), E.caveat())
    log.add(E.command_echo("clear"))
    log.add(E.system("local_command", content="<local-command-stdout></local-command-stdout>"))
    result = log.read()
    assert kinds_texts(result) == [(K.USER_TEXT, "/clear")]
    assert result.state == RunState.IDLE


def test_a_command_echo_carries_its_args(log: Log) -> None:
    result = log.add(E.command_echo("model", "opus high")).read()
    assert kinds_texts(result) == [(K.USER_TEXT, "/model opus high")]


def test_a_command_echo_keeps_an_idle_run_idle_and_a_working_run_working(log: Log) -> None:
    log.add(E.prompt("hi"), E.assistant(E.text("ok")), E.turn_duration(), E.command_echo("cost"))
    assert log.read().state == RunState.IDLE
    log.add(E.prompt("work"), E.command_echo("context"))
    assert log.read().state == RunState.WORKING


def test_context_writes_system_echo_and_ansi_stdout(log: Log) -> None:
    log.add(
        E.system(
            "local_command",
            content="<command-name>/context</command-name>\n            <command-message>context"
            "</command-message>\n            <command-args></command-args>",
        ),
        E.system(
            "local_command",
            content="<local-command-stdout> \u001b[1mContext usage\u001b[22m\n\u001b[38;5;2m⛁\u001b[39m 12k"
            "</local-command-stdout>",
        ),
        E.meta("## Context Usage"),
    )
    result = log.read()
    assert kinds_texts(result) == [(K.USER_TEXT, "/context"), (K.LIFECYCLE, "Context usage\n⛁ 12k")]
    assert result.state == RunState.IDLE


def test_user_stdout_is_lifecycle(log: Log) -> None:
    result = log.add(E.caveat(), E.command_echo("login"), E.stdout("Login interrupted")).read()
    assert kinds_texts(result) == [(K.USER_TEXT, "/login"), (K.LIFECYCLE, "Login interrupted")]
    assert not result.messages[1].is_error


def test_empty_stdout_is_silent(log: Log) -> None:
    assert log.add(E.stdout("")).read().messages == []


def test_a_project_command_starts_a_turn(log: Log) -> None:
    # compat §6: echo + an isMeta expansion marked turnCompanion, then the model replies.
    log.add(E.project_command_echo("probe-cmd", "foo bar"))
    echo_only = log.read()
    assert kinds_texts(echo_only) == [(K.USER_TEXT, "/probe-cmd foo bar")]
    assert echo_only.state == RunState.IDLE
    log.add(E.meta("Please say PROBECMD with foo bar\n", turnCompanion=True))
    expanded = log.read()
    assert expanded.messages == []
    assert expanded.state == RunState.WORKING
    log.add(E.assistant(E.text("PROBECMD foo bar"), attributionSkill="probe-cmd"), E.turn_duration())
    assert log.read().state == RunState.IDLE


# -- assistant ----------------------------------------------------------------------------


def test_one_message_per_assistant_block(log: Log) -> None:
    log.add(
        E.assistant(E.text("Calling a tool."), message_id="m", index=0, stop_reason="tool_use"),
        E.assistant(
            E.tool_use("toolu_1", "Bash", {"command": "ls -la\n  /tmp"}),
            message_id="m",
            index=1,
            stop_reason="tool_use",
        ),
    )
    result = log.read()
    assert [(m.kind, m.text, m.tool_name, m.tool_input) for m in result.messages] == [
        (K.ASSISTANT_TEXT, "Calling a tool.", "", ""),
        (K.TOOL_USE, "", "Bash", "ls -la /tmp"),
    ]
    assert result.messages[1].native_id == "toolu_1"
    assert result.state == RunState.WORKING


def test_a_rewritten_block_is_not_duplicated(log: Log) -> None:
    log.add(E.assistant(E.text("once"), message_id="m", index=0, stop_reason=None))
    first = log.read()
    log.add(E.assistant(E.text("once"), message_id="m", index=0))
    second = log.read()
    assert kinds_texts(first) == [(K.ASSISTANT_TEXT, "once")]
    assert second.messages == []
    assert second.state == RunState.IDLE  # the re-written copy still carries the stop reason


def test_the_dedupe_window_holds_the_last_recent_keys_read_in_any_pieces(log: Log) -> None:
    log.add(E.assistant(E.text("first"), message_id="m0", index=0))
    seen = log.read().messages
    for n in range(1, transcript.RECENT_KEYS):  # the window is full, m0 its oldest key
        seen += log.add(E.assistant(E.text(f"t{n}"), message_id=f"m{n}", index=0)).read().messages
    assert log.add(E.assistant(E.text("first"), message_id="m0", index=0)).read().messages == []
    log.add(E.assistant(E.text("pushes m0 out"), message_id="new", index=0)).read()
    again = log.add(E.assistant(E.text("first"), message_id="m0", index=0)).read()
    assert kinds_texts(again) == [(K.ASSISTANT_TEXT, "first")]  # beyond the window: shown again
    assert len(seen) == transcript.RECENT_KEYS
    whole = read_transcript(str(log.path), Cursor())
    assert [m.text for m in whole.messages] == [m.text for m in seen] + ["pushes m0 out", "first"]


def test_a_result_is_named_by_the_newest_of_the_last_recent_tools(log: Log) -> None:
    def call(tool_use_id: str, name: str, message_id: str) -> dict[str, Any]:
        return E.assistant(E.tool_use(tool_use_id, name, {}), message_id=message_id, stop_reason="tool_use")

    log.add(call("toolu_old", "Grep", "m_old"))
    for n in range(transcript.RECENT_TOOLS - 1):
        log.add(call(f"toolu_{n}", "Read", f"m{n}"))
    log.read()
    log.add(call("toolu_0", "Bash", "m_again"))
    results = log.add(E.tool_result("toolu_0", "ok"), E.tool_result("toolu_old", "gone")).read()
    # toolu_0's newest call is Bash; toolu_old left the window when toolu_0 was called again.
    shown = [(m.tool_name, m.text) for m in results.messages if m.kind == K.TOOL_RESULT]
    assert shown == [("Bash", "ok"), ("", "gone")]
    log.add(E.tool_result("toolu_1", "still known"))
    assert [m.tool_name for m in log.read().messages] == ["Read"]


def test_a_thinking_block_is_thinking_never_the_reply(log: Log) -> None:
    result = log.add(
        E.assistant({"type": "thinking", "thinking": "hmm", "signature": "s"}, message_id="m", index=0),
        E.assistant(E.text("answer"), message_id="m", index=1),
    ).read()
    assert kinds_texts(result) == [(K.THINKING, "hmm"), (K.ASSISTANT_TEXT, "answer")]


def test_redacted_thinking_is_thinking_without_text(log: Log) -> None:
    result = log.add(E.assistant({"type": "redacted_thinking", "data": "opaque"})).read()
    assert kinds_texts(result) == [(K.THINKING, "")]


@pytest.mark.parametrize(
    ("name", "tool_input", "summary"),
    [
        ("Read", {"file_path": "/w/a.py"}, "/w/a.py"),
        ("Edit", {"file_path": "/w/b.py", "old_string": "x", "new_string": "y"}, "/w/b.py"),
        ("Write", {"file_path": "/w/c.py", "content": "…"}, "/w/c.py"),
        ("Grep", {"pattern": "TODO", "path": "."}, "TODO"),
        (
            "AskUserQuestion",
            {"questions": [E.question("Fruit?", ["A"]), E.question("Drink?", ["B"])]},
            "Fruit? · Drink?",
        ),
        ("Mystery", {"a": 1, "b": [1, 2]}, '{"a":1,"b":[1,2]}'),
    ],
)
def test_tool_input_summaries(name: str, tool_input: dict[str, Any], summary: str) -> None:
    assert transcript.summarize_input(name, tool_input) == summary


def test_a_long_tool_input_is_truncated_to_one_line() -> None:
    summary = transcript.summarize_input("Mystery", {"blob": "x" * 1000})
    assert len(summary) < 260 and "\n" not in summary and "more characters" in summary


def test_an_end_turn_reply_goes_idle_and_turn_duration_confirms(log: Log) -> None:
    log.add(E.prompt("hi"), E.assistant(E.text("Hello.")))
    assert log.read().state == RunState.IDLE
    log.add(E.system("stop_hook_summary"), E.turn_duration())
    result = log.read()
    assert result.messages == [] and result.state == RunState.IDLE


def test_an_api_error_reply_is_an_error_line_not_a_reply(log: Log) -> None:
    entry = E.assistant(E.text("API Error: 500"), stop_reason="stop_sequence", isApiErrorMessage=True)
    result = log.add(E.prompt("go"), entry).read()
    assert kinds_texts(result)[1:] == [(K.LIFECYCLE, "API Error: 500")]
    assert result.messages[1].is_error
    assert result.state == RunState.IDLE


def _limit_entry(**extra: object) -> dict[str, Any]:
    return E.assistant(
        E.text("API Error: Request rejected (429)"),
        stop_reason="stop_sequence",
        isApiErrorMessage=True,
        **extra,
    )


def test_a_plan_usage_limit_is_a_limit_line_with_the_reset_the_cli_recorded(log: Log) -> None:
    # compat §16: the subscription shape, as the pinned CLI's own schema describes it.
    info = {"status": "rejected", "rateLimitType": "five_hour", "resetsAt": 1_800_000_000}
    entry = _limit_entry(
        error="rate_limit", apiError="usage_limit_reached", apiErrorParams={"rate_limit_info": info}
    )
    line = log.add(E.prompt("go"), entry).read().messages[1]
    assert (line.limit, line.resets_at, line.is_error) == ("usage", 1_800_000_000, True)


def test_a_429_without_a_reset_is_a_rate_limit_with_no_reset(log: Log) -> None:
    line = log.add(E.prompt("go"), _limit_entry(error="rate_limit", apiErrorStatus=429)).read().messages[1]
    assert (line.limit, line.resets_at) == ("rate", 0)


def test_other_api_errors_are_no_limit(log: Log) -> None:
    line = log.add(E.prompt("go"), _limit_entry(error="unknown", apiErrorStatus=500)).read().messages[1]
    assert line.limit == ""


def _request(digest: str) -> dict[str, object]:
    return {"type": "api-request", "id": f"r-{digest}", "requestDigest": digest, "timestamp": E.TS}


def test_a_resent_request_is_one_retry_line_and_a_status_that_counts(log: Log) -> None:
    first = log.add(E.prompt("go"), _request("d1")).read()
    assert kinds_texts(first) == [(K.USER_TEXT, "go")]
    assert first.running == ""
    second = log.add(_request("d1")).read()
    assert kinds_texts(second) == [(K.LIFECYCLE, transcript.RETRYING)]
    assert second.state == RunState.WORKING
    assert second.running.startswith("the API request, retry 1 (")
    third = log.add(_request("d1")).read()
    assert third.messages == []  # the line shown stays; the status counts on
    assert third.running.startswith("the API request, retry 2 (")
    replied = log.add(E.assistant(E.text("done"), message_id="m1")).read()
    assert (replied.state, replied.running) == (RunState.IDLE, "")


def test_an_interrupted_retry_leaves_no_count_for_the_next_turn(log: Log) -> None:
    log.add(E.prompt("go"), _request("d1"), _request("d1")).read()
    log.add(E.user("[Request interrupted by user]")).read()
    assert log.add(E.prompt("again")).read().running == ""


def test_a_new_request_after_a_response_is_not_a_retry(log: Log) -> None:
    log.add(E.prompt("go"), _request("d1"), E.assistant(E.tool_use("t1", "Bash", {"command": "ls"})))
    log.add(E.tool_result("t1", "ok"), _request("d2"), E.assistant(E.text("done"), message_id="m2"))
    log.add(_request("d3"))
    assert all("retrying" not in m.text for m in log.read().messages)


# -- tool results -------------------------------------------------------------------------


def test_a_tool_result_keeps_working_and_names_its_tool(log: Log) -> None:
    log.add(
        E.assistant(E.tool_use("toolu_1", "Bash", {"command": "true"}), stop_reason="tool_use"),
        E.tool_result("toolu_1", "(Bash completed with no output)", tool_use_result={"stdout": ""}),
    )
    result = log.read()
    message = result.messages[-1]
    assert (message.kind, message.text, message.tool_name, message.native_id) == (
        K.TOOL_RESULT,
        "(Bash completed with no output)",
        "Bash",
        "toolu_1",
    )
    assert not message.is_error
    assert result.state == RunState.WORKING


def test_tool_result_blocks_join_and_truncate(log: Log) -> None:
    content = [E.text("a" * 5000), {"type": "tool_reference", "tool_name": "ExitPlanMode"}]
    result = log.add(E.tool_result("toolu_9", content, is_error=True)).read()
    message = result.messages[0]
    assert message.is_error
    assert message.text.startswith("a" * 4000) and "more characters" in message.text
    result = log.add(
        E.tool_result("toolu_8", [{"type": "tool_reference", "tool_name": "X"}, E.text("Tool loaded.")])
    ).read()
    assert result.messages[0].text == "[loaded X]\nTool loaded."


# -- interruptions (compat §1, §11) -------------------------------------------------------


def test_an_interrupt_mid_stream_keeps_the_partial_text_and_goes_idle(log: Log) -> None:
    log.add(E.prompt("SLOW please"))
    log.add(E.assistant(E.text("word0 word1 "), stop_reason=None, isAbortedMidStream=True))
    streaming = log.read()
    assert streaming.state == RunState.WORKING
    log.add(E.interrupted())
    result = log.read()
    assert kinds_texts(result) == [(K.LIFECYCLE, "Request interrupted by user")]
    assert result.state == RunState.IDLE
    assert kinds_texts(streaming)[-1] == (K.ASSISTANT_TEXT, "word0 word1 ")


def test_an_interrupted_tool_goes_idle(log: Log) -> None:
    log.add(
        E.prompt("run"),
        E.assistant(E.tool_use("toolu_1", "Bash", {"command": "sleep 30"}), stop_reason="tool_use"),
    )
    log.add(E.declined("toolu_1"), E.interrupted(for_tool=True))
    result = log.read()
    assert [m.kind for m in result.messages][-2:] == [K.TOOL_RESULT, K.LIFECYCLE]
    assert result.messages[-2].is_error
    assert result.state == RunState.IDLE


# -- dialogs ------------------------------------------------------------------------------

COLOR = E.question("Which color do you prefer?", ["Red", "Green", "Blue"], header="Color")


def test_one_question_is_a_flat_dialog(log: Log) -> None:
    result = log.add(E.prompt("ask"), E.ask("toolu_q", COLOR)).read()
    dialog = result.dialog
    assert dialog is not None
    assert dialog.kind == DialogKind.QUESTION and dialog.tool_use_id == "toolu_q"
    assert dialog.questions is None
    assert dialog.prompt == "Which color do you prefer?"
    assert dialog.header == "Color"
    assert [o.label for o in dialog.options] == ["Red", "Green", "Blue"]
    assert dialog.options[0].description == "The Red"
    assert not dialog.multi and dialog.free_text
    assert result.state == RunState.WORKING


def test_two_questions_are_a_form(log: Log) -> None:
    fruit = E.question("Which fruit?", ["Apple", "Banana"])
    toppings = E.question("Which toppings?", ["Cheese", "Olives"], multi=True)
    dialog = log.add(E.ask("toolu_f", fruit, toppings)).read().dialog
    assert dialog is not None and dialog.questions is not None
    assert [q.prompt for q in dialog.questions] == ["Which fruit?", "Which toppings?"]
    assert [q.multi for q in dialog.questions] == [False, True]
    assert dialog.prompt == "" and dialog.options == ()


def test_a_dialog_clears_when_its_result_lands(log: Log) -> None:
    log.add(E.ask("toolu_q", COLOR))
    assert log.read().dialog is not None
    log.add(E.answered("toolu_q", [COLOR], {"Which color do you prefer?": "Green"}))
    result = log.read()
    assert result.dialog is None
    assert result.messages[0].kind == K.TOOL_RESULT
    assert result.messages[0].tool_name == "AskUserQuestion"


def test_a_pending_dialog_survives_across_reads(log: Log) -> None:
    log.add(E.ask("toolu_q", COLOR))
    log.read()
    log.add(E.bookkeeping("mode"))
    assert log.read().dialog is not None


def test_a_plan_dialog_uses_the_stable_labels(log: Log) -> None:
    result = log.add(E.plan("toolu_p", "# Plan\n\n1. a")).read()
    dialog = result.dialog
    assert dialog is not None and dialog.kind == DialogKind.PLAN
    assert dialog.body == "# Plan\n\n1. a"
    assert [o.label for o in dialog.options] == [
        "Approve — switch to auto mode",
        "Approve — ask before each action",
        "Reject with feedback",
        "Reject — keep planning",
    ]
    assert dialog.options == PLAN_OPTIONS
    assert result.messages[0].tool_input == "<HOME>/.claude/plans/p.md"


def test_a_declined_question_ends_the_turn(log: Log) -> None:
    log.add(E.ask("toolu_q", COLOR), E.declined("toolu_q"), E.interrupted(for_tool=True))
    result = log.read()
    assert result.dialog is None and result.state == RunState.IDLE


# -- backstop -----------------------------------------------------------------------------


def _single_intent(label: str) -> dict[str, Intent]:
    return {
        "toolu_q": Intent("toolu_q", DialogKind.QUESTION, answers=(("Which color do you prefer?", label),))
    }


def test_a_matching_answer_is_silent(log: Log) -> None:
    log.add(E.ask("toolu_q", COLOR))
    log.read()
    log.add(E.answered("toolu_q", [COLOR], {"Which color do you prefer?": "Green"}))
    assert [m.kind for m in log.read(_single_intent("Green")).messages] == [K.TOOL_RESULT]


def test_a_different_answer_warns(log: Log) -> None:
    log.add(E.ask("toolu_q", COLOR), E.answered("toolu_q", [COLOR], {"Which color do you prefer?": "Red"}))
    result = log.read(_single_intent("Green"))
    warning = result.messages[-1]
    assert warning.kind == K.LIFECYCLE and warning.is_error
    assert "Green" in warning.text and "Red" in warning.text
    assert warning.native_id == "toolu_q:backstop"


def test_a_decline_although_lab_answered_warns(log: Log) -> None:
    log.add(E.ask("toolu_q", COLOR), E.declined("toolu_q"), E.interrupted(for_tool=True))
    result = log.read(_single_intent("Green"))
    assert any(m.is_error and "decline" in m.text for m in result.messages if m.kind == K.LIFECYCLE)


def test_no_intent_is_silent(log: Log) -> None:
    log.add(E.ask("toolu_q", COLOR), E.answered("toolu_q", [COLOR], {"Which color do you prefer?": "Red"}))
    assert [m.kind for m in log.read({}).messages] == [K.TOOL_USE, K.TOOL_RESULT]


def test_multi_select_compares_sets_of_labels(log: Log) -> None:
    toppings = E.question("Which toppings do you want?", ["Cheese", "Ham", "Olives"], multi=True)
    log.add(E.ask("toolu_m", toppings))
    dialog = log.read().dialog
    assert dialog is not None
    intent = intent_for(dialog, [Answer(choices=(0, 2), text="extra pineapple")])
    assert intent.answers == (
        ("Which toppings do you want?", frozenset({"Cheese", "Olives", "extra pineapple"})),
    )
    # compat §4: recorded in toggle order.
    log.add(
        E.answered("toolu_m", [toppings], {"Which toppings do you want?": "Olives, extra pineapple, Cheese"})
    )
    assert [m.kind for m in log.read({"toolu_m": intent}).messages] == [K.TOOL_RESULT]


def test_multi_select_with_a_missing_label_warns(log: Log) -> None:
    toppings = E.question("Which toppings do you want?", ["Cheese", "Ham", "Olives"], multi=True)
    intent = Intent(
        "toolu_m",
        DialogKind.QUESTION,
        answers=(("Which toppings do you want?", frozenset({"Cheese", "Ham"})),),
    )
    log.add(
        E.ask("toolu_m", toppings),
        E.answered("toolu_m", [toppings], {"Which toppings do you want?": "Cheese"}),
    )
    assert log.read({"toolu_m": intent}).messages[-1].is_error


def test_multi_select_with_a_label_lab_did_not_choose_warns(log: Log) -> None:
    # Every chosen label was recorded, plus one the operator did not tick: not the answer sent.
    toppings = E.question("Which toppings do you want?", ["Cheese", "Ham", "Olives"], multi=True)
    intent = Intent(
        "toolu_m",
        DialogKind.QUESTION,
        answers=(("Which toppings do you want?", frozenset({"Cheese", "Olives"})),),
    )
    log.add(
        E.ask("toolu_m", toppings),
        E.answered("toolu_m", [toppings], {"Which toppings do you want?": "Cheese, Ham, Olives"}),
    )
    warning = log.read({"toolu_m": intent}).messages[-1]
    assert warning.kind == K.LIFECYCLE and warning.is_error
    assert "recorded “Cheese, Ham, Olives”" in warning.text


def test_intent_for_single_and_free_text() -> None:
    from providers.schema import Dialog, Option

    dialog = Dialog("t", DialogKind.QUESTION, prompt="Q?", options=(Option("A"), Option("B")))
    assert intent_for(dialog, [Answer(choices=(1,))]).answers == (("Q?", "B"),)
    assert intent_for(dialog, [Answer(text=" purple ")]).answers == (("Q?", "purple"),)


def _plan_result(approved: bool, feedback: str = "") -> dict[str, Any]:
    if approved:
        return E.tool_result(
            "toolu_p",
            "User has approved your plan. You can now start coding.",
            tool_use_result={"plan": "# Plan", "isAgent": False, "filePath": "<HOME>/p.md"},
        )
    if feedback:
        text = f"The user doesn't want to proceed with this tool use. … the user said:\n{feedback}"
        return E.tool_result(
            "toolu_p", text, is_error=True, tool_use_result=f"Error: {text}", userFeedback=feedback
        )
    return E.declined("toolu_p")


@pytest.mark.parametrize(
    ("choice", "text", "result", "warns"),
    [
        (0, "", _plan_result(True), False),
        (1, "", _plan_result(True), False),
        (0, "", _plan_result(False), True),
        (2, "add tests", _plan_result(False, "add tests"), False),
        (2, "add tests", _plan_result(False, "something else"), True),
        (2, "add tests", _plan_result(False), True),
        (2, "add tests", _plan_result(True), True),
        (3, "", _plan_result(False), False),
        (3, "", _plan_result(True), True),
    ],
)
def test_plan_backstop(log: Log, choice: int, text: str, result: dict[str, Any], warns: bool) -> None:
    log.add(E.plan("toolu_p"))
    dialog = log.read().dialog
    assert dialog is not None
    intent = intent_for(dialog, [Answer(choices=(choice,), text=text)])
    expected_decision = PlanDecision.APPROVE if choice < 2 else PlanDecision.REJECT
    assert intent.plan_decision == expected_decision
    log.add(result)
    messages = log.read({"toolu_p": intent}).messages
    assert any(m.kind == K.LIFECYCLE and m.is_error for m in messages) == warns


def test_plan_label_constants() -> None:
    assert [o.label for o in PLAN_OPTIONS] == [
        PLAN_APPROVE_AUTO,
        PLAN_APPROVE_MANUAL,
        PLAN_REJECT_FEEDBACK,
        PLAN_REJECT_REFINE,
    ]


# -- robustness ---------------------------------------------------------------------------


def test_an_empty_transcript_is_idle(log: Log) -> None:
    result = log.read()
    assert result.messages == [] and result.state == RunState.IDLE and result.dialog is None


def test_a_missing_transcript_is_idle(tmp_path: Path) -> None:
    result = read_transcript(str(tmp_path / "later.jsonl"), Cursor())
    assert result.messages == [] and result.state == RunState.IDLE


def test_a_corrupt_line_is_skipped_counted_and_surfaced(log: Log) -> None:
    log.add(b"{not json\n", b"[1,2]\n", E.prompt("after"))
    result = log.read()
    assert kinds_texts(result) == [
        (K.LIFECYCLE, "skipped an unreadable transcript line (9 bytes)"),
        (K.LIFECYCLE, "skipped an unreadable transcript line (5 bytes)"),
        (K.USER_TEXT, "after"),
    ]
    assert all(m.is_error for m in result.messages[:2])
    assert result.cursor.provider_state.corrupt == 2
    assert result.stats["corrupt"] == 2


def test_a_truncated_bookkeeping_line_is_reported_not_skipped(log: Log) -> None:
    result = log.add(b'{"type":"mode","mode":"nor\n').read()
    assert result.stats.get("corrupt") == 1


def test_an_oversized_line_warns(log: Log) -> None:
    log.add(E.prompt("x" * 500), E.prompt("small"))
    result = log.read(max_line_bytes=300)
    assert result.messages[0].kind == K.LIFECYCLE and result.messages[0].is_error
    assert "oversized" in result.messages[0].text
    assert kinds_texts(result)[1] == (K.USER_TEXT, "small")


def test_a_partial_line_waits_for_its_end(log: Log) -> None:
    raw = E.line(E.prompt("split"))
    log.add(raw[:10])
    assert log.read().messages == []
    log.add(raw[10:])
    assert kinds_texts(log.read()) == [(K.USER_TEXT, "split")]


def test_seq_continues_across_reads_and_restarts_on_reset(log: Log) -> None:
    log.add(E.prompt("one"))
    log.read()
    log.add(E.prompt("two"))
    assert [m.seq for m in log.read().messages] == [1]
    log.path.write_bytes(E.line(E.prompt("fresh")))
    result = log.read()
    assert result.reset and [m.seq for m in result.messages] == [0]


def test_another_path_starts_a_new_epoch(tmp_path: Path, log: Log) -> None:
    log.add(E.prompt("old"))
    log.read()
    new = Log(tmp_path / "new.jsonl").add(E.command_echo("clear"))
    result = read_transcript(str(new.path), log.cursor)
    assert result.reset and [m.seq for m in result.messages] == [0]
    assert result.state == RunState.IDLE


def test_a_symlinked_transcript_is_refused(tmp_path: Path, log: Log) -> None:
    link = tmp_path / "link.jsonl"
    link.symlink_to(log.path)
    with pytest.raises(TranscriptUnreadable):
        read_transcript(str(link), Cursor())


def test_bookkeeping_is_skipped_without_a_parse(log: Log, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[bytes] = []
    real = orjson.loads

    def spy(raw: bytes) -> Any:
        parsed.append(raw)
        return real(raw)

    monkeypatch.setattr(transcript.orjson, "loads", spy)
    kinds = [
        "mode",
        "permission-mode",
        "atis-latch",
        "last-prompt",
        "tools-used",
        "cost-state",
        "api-request-shape",
        "file-history-snapshot",
        "attachment",
    ]
    log.add(*[E.bookkeeping(k) for k in kinds])
    result = log.read()
    assert parsed == [] and result.stats["bookkeeping"] == len(kinds)


def test_sidechain_entries_in_the_run_s_own_file_are_skipped(log: Log) -> None:
    log.add(E.prompt("main"), E.prompt("sub", isSidechain=True))
    assert kinds_texts(log.read()) == [(K.USER_TEXT, "main")]
    # Read on its own, a later sidechain entry is still the run's file's, not a conversation.
    assert log.add(E.prompt("sub again", isSidechain=True)).read().messages == []


def test_a_subagent_s_own_file_is_read_as_a_conversation(log: Log) -> None:
    # compat §13: subagents/agent-<id>.jsonl holds only isSidechain entries.
    log.add(E.prompt("task", isSidechain=True, agentId="a1"))
    log.add(E.assistant(E.text("done"), isSidechain=True, agentId="a1"))
    assert kinds_texts(log.read()) == [(K.USER_TEXT, "task"), (K.ASSISTANT_TEXT, "done")]


_LAUNCH = (
    "Async agent launched successfully.\nagentId: a1b2 (internal ID)\nThe agent is working in the background."
)


def _notification(tool_use_id: str, status: str = "completed") -> dict[str, object]:
    body = (
        f"<task-notification>\n<task-id>a1b2</task-id>\n<tool-use-id>{tool_use_id}</tool-use-id>\n"
        f'<status>{status}</status>\n<summary>Agent "Look around" finished</summary>\n'
        "<result>Found two files.</result>\n</task-notification>"
    )
    return E.user(body, origin={"kind": "task-notification"}, promptSource="system")


def test_a_background_agent_runs_until_its_notification(log: Log) -> None:
    log.add(
        E.prompt("go"), E.assistant(E.tool_use("t1", "Agent", {"description": "Look around", "prompt": "p"}))
    )
    assert log.read().background == ()  # not launched yet
    launched = log.add(E.tool_result("t1", _LAUNCH)).read()
    assert launched.messages[0].text == "Agent “Look around” is working in the background"
    assert launched.messages[0].side == "a1b2"
    assert launched.background == ("Look around",)
    idle = log.add(
        E.assistant(E.text("started"), message_id="m2"),
        {**E.turn_duration(), "pendingBackgroundAgentCount": 1},
    )
    assert idle.read().background == ("Look around",)
    done = log.add(_notification("t1")).read()
    assert kinds_texts(done) == [(K.LIFECYCLE, 'Agent "Look around" finished: Found two files.')]
    message = done.messages[0]
    assert (message.detail, message.side, message.is_error) == ("Found two files.", "a1b2", False)
    assert done.background == ()
    assert done.state == RunState.WORKING  # the agent's turn: the model answers it


def test_a_failed_agent_notification_is_an_error(log: Log) -> None:
    log.add(E.assistant(E.tool_use("t1", "Agent", {"description": "Look around", "prompt": "p"})))
    log.add(E.tool_result("t1", _LAUNCH))
    assert log.add(_notification("t1", status="failed")).read().messages[-1].is_error


def test_no_pending_agents_at_a_turn_end_clears_the_background(log: Log) -> None:
    log.add(E.assistant(E.tool_use("t1", "Agent", {"description": "Look around", "prompt": "p"})))
    log.add(E.tool_result("t1", _LAUNCH))
    assert log.read().background == ("Look around",)
    log.add({**E.turn_duration(), "pendingBackgroundAgentCount": 0})
    assert log.read().background == ()


def test_compaction_is_a_boundary_and_a_collapsed_summary_and_keeps_the_state(log: Log) -> None:
    log.add(E.prompt("go"))
    boundary = E.system("compact_boundary", content="Conversation compacted")
    boundary["compactMetadata"] = {"trigger": "auto", "preTokens": 190000}
    summary = E.user(
        "This session is being continued from a previous conversation that ran out of context. "
        "The summary below covers the earlier portion of the conversation.\n\n"
        "<system-reminder>\nx\n</system-reminder>\nSummary:\n1. We fixed the bug."
        "\n\nIf you need specific details from before compaction, read the transcript.",
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    result = log.add(boundary, summary).read()
    assert kinds_texts(result)[1:] == [
        (K.LIFECYCLE, "Conversation compacted (automatically, the context was full)"),
        (K.LIFECYCLE, "Summary of the conversation before it was compacted"),
    ]
    assert result.messages[2].detail == "Summary:\n1. We fixed the bug."
    assert result.state == RunState.WORKING  # auto-compaction mid-turn: still working


def test_a_plan_tool_use_carries_the_plan_text(log: Log) -> None:
    result = log.add(E.plan("t1", "# Plan\n\n1. first")).read()
    assert result.messages[0].detail == "# Plan\n\n1. first"


def test_provider_state_is_frozen(log: Log) -> None:
    state = log.add(E.prompt("x")).read().cursor.provider_state
    assert isinstance(state, ClaudeState)
    with pytest.raises(AttributeError):
        state.corrupt = 3  # type: ignore[misc]


def test_informational_system_entries_are_lifecycle(log: Log) -> None:
    log.add(E.system("informational", content="\x1b[2mAuto mode is now the default\x1b[22m", level="info"))
    log.add(E.system("informational", content="Something failed", level="warning"))
    log.add(E.system("informational", content=""))
    result = log.read()
    assert [(m.kind, m.text, m.is_error) for m in result.messages] == [
        (K.LIFECYCLE, "Auto mode is now the default", False),
        (K.LIFECYCLE, "Something failed", True),
    ]
    assert result.state == RunState.IDLE


def test_an_oversized_line_spanning_reads_warns_once(log: Log) -> None:
    raw = E.line(E.prompt("o" * 1000))
    log.add(E.prompt("before"), raw[:600])
    first = log.read(max_line_bytes=300)
    assert kinds_texts(first) == [(K.USER_TEXT, "before")]
    log.add(raw[600:], E.prompt("after"))
    second = log.read(max_line_bytes=300)
    assert [m.kind for m in second.messages] == [K.LIFECYCLE, K.USER_TEXT]
    assert f"({len(raw) - 1} bytes)" in second.messages[0].text
    assert second.cursor.provider_state.oversized == 1


# -- the approval backstop (compat §7 "Approvals") ---------------------------------------------

REJECTION = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file)."
)


def approval_intent(label_key: str, feedback: str = "") -> Intent:
    from providers.claude_code.dialogs import approval_dialog

    dialog = approval_dialog("toolu_b", "Bash", {"command": "touch x"}, [])
    index = next(i for i, o in enumerate(dialog.options) if o.key == label_key)
    return intent_for(dialog, [Answer(choices=(index,), text=feedback)])


def backstop(log: Log, intent: Intent, result: dict[str, Any]) -> list[str]:
    log.add(E.assistant(E.tool_use("toolu_b", "Bash", {"command": "touch x"})), result)
    read = log.read({"toolu_b": intent})
    return [m.text for m in read.messages if m.native_id == "toolu_b:backstop"]


@pytest.mark.parametrize(
    ("key", "feedback", "content", "warns"),
    [
        ("allow@0", "", "(Bash completed with no output)", False),
        ("allow@0", "", "Exit code 1\nboom", False),  # an allowed command that fails is still allowed
        ("allow@0", "", REJECTION + " STOP what you are doing", True),
        ("deny", "", REJECTION + " STOP what you are doing", False),
        ("deny", "", "(Bash completed with no output)", True),
        (
            "deny-feedback@3",
            "use printf",
            REJECTION + " To tell you how to proceed, the user said:\nuse printf",
            False,
        ),
        (
            "deny-feedback@3",
            "use printf",
            REJECTION + " To tell you how to proceed, the user said:\nuse echo",
            True,
        ),
        ("deny-feedback@3", "use printf", REJECTION + " STOP what you are doing", True),
    ],
)
def test_the_approval_backstop(log: Log, key: str, feedback: str, content: str, warns: bool) -> None:
    result = E.tool_result("toolu_b", content, is_error=content.startswith(("Exit", "The user")))
    assert bool(backstop(log, approval_intent(key, feedback), result)) == warns


def test_while_working_it_knows_since_when_and_the_tool_it_waits_on(log: Log) -> None:
    started = log.add(E.prompt("go", timestamp="2026-12-03T10:00:00.000Z")).read()
    assert (started.since, started.running) == ("2026-12-03T10:00:00.000Z", "")
    bash = E.assistant(E.tool_use("t1", "Bash", {"command": "sleep 30"}), stop_reason="tool_use")
    waiting = log.add({**bash, "timestamp": "2026-12-03T10:00:05.000Z"}).read()
    assert (waiting.since, waiting.running) == ("2026-12-03T10:00:00.000Z", "Bash sleep 30")
    back = log.add(E.tool_result("t1", "ok")).read()
    assert (back.since, back.running) == ("2026-12-03T10:00:00.000Z", "")
    done = log.add(E.assistant(E.text("done"), message_id="m2"), E.turn_duration()).read()
    assert (done.state, done.since, done.running) == (RunState.IDLE, "", "")


# -- attachments (compat §13) ---------------------------------------------------------------


def _attachment(body: dict[str, Any]) -> bytes:
    # The CLI writes compact JSON with the attachment key first (the fixtures are re-dumped
    # with spaces), and the cheap skip reads these bytes before any parse.
    entry = {"parentUuid": None, "isSidechain": False, "attachment": body, "type": "attachment"}
    return orjson.dumps({**entry, "uuid": f"a-{body['type']}", "timestamp": E.TS}) + b"\n"


def test_a_mentioned_file_and_hook_messages_are_read_from_the_compact_lines(log: Log) -> None:
    result = log.add(
        E.prompt("what is in @README.md"),
        _attachment({"type": "file", "filename": "/w/README.md", "displayPath": "README.md"}),
        _attachment({"type": "prompt_snapshot", "systemPrompt": ["x" * 5000]}),
        _attachment({"type": "hook_system_message", "content": "Checked", "hookName": "PreToolUse:Bash"}),
        _attachment({"type": "hook_blocking_error", "hookName": "Stop", "stderr": "no", "exitCode": 2}),
    ).read()
    assert kinds_texts(result)[1:] == [
        (K.LIFECYCLE, "Read README.md"),
        (K.LIFECYCLE, "PreToolUse hook (Bash): Checked"),
        (K.LIFECYCLE, "Stop hook failed (exit status 2) and blocked it: no"),
    ]
    assert [m.is_error for m in result.messages[1:]] == [False, False, True]
    assert result.stats["bookkeeping"] == 1  # the snapshot, unparsed
    assert result.state == RunState.WORKING


def test_a_bash_mode_line_from_the_terminal_is_the_command_and_its_output(log: Log) -> None:
    result = log.add(
        E.user("<bash-input>ls nope</bash-input>"),
        E.user("<bash-stdout>a\n</bash-stdout><bash-stderr>ls: nope: \x1b[31mmissing\x1b[0m\n</bash-stderr>"),
    ).read()
    assert kinds_texts(result) == [(K.USER_TEXT, "! ls nope"), (K.TOOL_RESULT, "a\nls: nope: missing")]
    assert result.messages[1].is_error and result.messages[1].tool_name == "Bash"
    assert result.state == RunState.WORKING


def test_a_state_kept_as_a_checkpoint_holds_a_few_kilobytes_however_long_the_transcript(log: Log) -> None:
    """The transcript index keeps one cursor per 256 messages for the whole transcript: the
    state each carries must not hold the keys and names it has seen (25 KB each before)."""
    kept: list[Cursor] = []
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for start in range(0, 3000, 50):  # a live run: appended and read 50 messages at a time
        for n in range(start, start + 50):  # a tool call and its result, then two replies
            if n % 4 == 0:
                log.add(
                    E.assistant(
                        E.tool_use(f"toolu_{n}", "Read", {}), message_id=f"m{n}", stop_reason="tool_use"
                    )
                )
            elif n % 4 == 1:
                log.add(E.tool_result(f"toolu_{n - 1}", "contents"))
            else:
                log.add(E.assistant(E.text(f"reply {n}"), message_id=f"m{n}"))
        log.read()
        if log.cursor.next_seq // 256 > len(kept):
            kept.append(log.cursor)
    log.cursor = Cursor()
    gc.collect()
    per_state = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    tracemalloc.stop()
    assert len(kept) == 11
    assert per_state < 4 * 1024, f"{per_state / 1024:.1f} KB per kept state"
