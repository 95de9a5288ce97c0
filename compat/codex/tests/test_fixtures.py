"""The captured rollouts hold what each scenario is for, and no real path of the machine that
captured them (compat/codex/capture_fixtures.py writes them)."""

from __future__ import annotations

import json
import re

import pytest

from compat.codex.home import PINNED_VERSION, fixtures_dir
from compat.codex.live import events, message_texts, payloads, read_jsonl

FIXTURES = fixtures_dir(PINNED_VERSION)
NAMES = [
    "prompt__text_reply",
    "tool__exec_command",
    "approval__approved",
    "approval__esc",
    "interrupt__esc_streaming",
    "interrupt__esc_running_command",
    "turn__failed_after_retries",
    "clear__old_file",
    "clear__new_file",
]


def lines(name):
    return read_jsonl(FIXTURES / f"{name}.jsonl")


@pytest.mark.parametrize("name", NAMES)
def test_fixture_is_a_whole_rollout_with_placeholders_only(name):
    raw = (FIXTURES / f"{name}.jsonl").read_text()
    assert not re.search(r"/tmp/|/root/|/home/", raw), "a real path survived"
    assert "<WORKTREE>" in raw
    ls = lines(name)
    assert ls[0]["type"] == "session_meta" and ls[0]["payload"]["cli_version"] == PINNED_VERSION
    assert [e["ordinal"] for e in ls] == list(range(len(ls)))
    assert all(len(json.dumps(e)) < 20_000 for e in ls), "bulky instructions are trimmed"


def test_text_reply():
    ls = lines("prompt__text_reply")
    assert message_texts(ls, "assistant") == ["Hello from the scripted model."]
    assert events(ls, "task_complete")


def test_tool_call_and_output_pair_by_call_id():
    ls = lines("tool__exec_command")
    [call] = payloads(ls, "response_item", "function_call")
    [out] = payloads(ls, "response_item", "function_call_output")
    assert call["name"] == "exec_command" and out["call_id"] == call["call_id"]
    assert "fixture-tool" in out["output"]


def test_approval_outcomes():
    approved = lines("approval__approved")
    assert (
        "Process exited with code 0"
        in payloads(approved, "response_item", "function_call_output")[0]["output"]
    )
    assert events(approved, "task_complete")
    denied = lines("approval__esc")
    assert payloads(denied, "response_item", "function_call_output")[0]["output"].endswith("aborted by user")
    assert events(denied, "turn_aborted")[0]["reason"] == "interrupted"
    assert not events(denied, "task_complete")


def test_a_command_interrupted_while_it_runs_is_recorded_as_a_decline_is():
    """Why the chat cannot say "declined" from the rollout alone: Esc on a running command (no
    approval asked) writes the same entries, in the same order, as Esc on its approval prompt."""
    shape = [
        (e["type"], e["payload"].get("type"))
        for e in lines("interrupt__esc_running_command")
        if e["type"] in ("response_item", "event_msg")
    ]
    declined = [
        (e["type"], e["payload"].get("type"))
        for e in lines("approval__esc")
        if e["type"] in ("response_item", "event_msg")
    ]
    assert shape == declined
    [out] = payloads(lines("interrupt__esc_running_command"), "response_item", "function_call_output")
    assert re.fullmatch(r"Wall time: [\d.]+ seconds\naborted by user", out["output"])


def test_a_turn_codex_gave_up_on_has_its_error_only_on_task_complete():
    ls = lines("turn__failed_after_retries")
    assert not events(ls, "error") and not events(ls, "stream_error")
    assert [c["error"]["codex_error_info"] for c in events(ls, "task_complete")] == [
        {"response_too_many_failed_attempts": {"http_status_code": 429}},
        "internal_server_error",
    ]
    assert message_texts(ls, "assistant") == []


def test_interrupt_then_next_turn_in_the_same_rollout():
    ls = lines("interrupt__esc_streaming")
    assert [
        e["payload"]["type"] for e in ls if e["payload"].get("type") in ("turn_aborted", "task_complete")
    ] == [
        "turn_aborted",
        "task_complete",
    ]
    assert message_texts(ls, "assistant") == ["Back after the interrupt."]


def test_clear_makes_two_threads():
    old, new = lines("clear__old_file"), lines("clear__new_file")
    assert old[0]["payload"]["id"] != new[0]["payload"]["id"]
    assert message_texts(old, "assistant") == ["Before the clear."]
    assert message_texts(new, "assistant") == ["After the clear."]
