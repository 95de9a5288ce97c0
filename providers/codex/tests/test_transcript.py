"""The line a turn that ended in an error shows, for every shape its error may take."""

from __future__ import annotations

import pytest

from providers.codex.transcript import turn_error_text


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        (
            {
                "message": "exceeded retry limit, last status: 503 Service Unavailable",
                "codex_error_info": {"response_too_many_failed_attempts": {"http_status_code": 503}},
            },
            "The turn failed after Codex's retries (last HTTP status 503): exceeded retry limit, last "
            "status: 503 Service Unavailable",
        ),
        (
            {"message": "stream closed", "codex_error_info": {"response_too_many_failed_attempts": {}}},
            "The turn failed after Codex's retries: stream closed",
        ),
        (
            {"message": "Quota exceeded.", "codex_error_info": "usage_limit_exceeded"},
            "The turn failed (usage limit exceeded): Quota exceeded.",
        ),
        ({"codex_error_info": "unauthorized"}, "The turn failed (unauthorized); Codex recorded no message."),
        ("connection reset", "The turn failed: connection reset"),
        ({}, "The turn failed; Codex recorded no message."),
        (7, "The turn failed; Codex recorded no cause."),
    ],
)
def test_a_failed_turn_says_what_codex_recorded_and_no_more(error, shown):
    assert turn_error_text(error) == shown


# compat §16: the limit lines and the token counts, on small 0.171.0-shaped lines.
def _event(payload: dict[str, object]) -> bytes:
    import orjson

    return (
        orjson.dumps({"timestamp": "2026-12-05T00:00:00Z", "type": "event_msg", "payload": payload}) + b"\n"
    )


def _window(used: float, minutes: int, resets_at: int) -> dict[str, object]:
    return {"used_percent": used, "window_minutes": minutes, "resets_at": resets_at}


def _read(tmp_path, *lines: bytes):
    from providers.codex.transcript import read_transcript
    from providers.schema import Cursor

    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"".join(lines))
    return read_transcript(str(path), Cursor(), {})


USAGE_LIMIT = {"message": "You've hit your usage limit.", "codex_error_info": "usage_limit_exceeded"}


def test_a_usage_limit_takes_its_reset_from_the_full_window_the_rollout_reported(tmp_path):
    limits = {"primary": _window(100, 300, 1_800_000_000), "secondary": _window(40, 10080, 1_800_500_000)}
    read = _read(
        tmp_path,
        _event({"type": "task_started"}),
        _event({"type": "token_count", "info": None, "rate_limits": limits}),
        _event({"type": "task_complete", "turn_id": "t1", "error": USAGE_LIMIT}),
    )
    line = read.messages[-1]
    assert (line.limit, line.resets_at) == ("usage", 1_800_000_000)


def test_a_usage_limit_with_no_window_reported_has_no_reset(tmp_path):
    read = _read(tmp_path, _event({"type": "task_complete", "turn_id": "t1", "error": USAGE_LIMIT}))
    assert (read.messages[-1].limit, read.messages[-1].resets_at) == ("usage", 0)


@pytest.mark.parametrize(
    ("error", "limit"),
    [
        (
            {
                "message": "x",
                "codex_error_info": {"response_too_many_failed_attempts": {"http_status_code": 429}},
            },
            "rate",
        ),
        (
            {
                "message": "x",
                "codex_error_info": {"response_too_many_failed_attempts": {"http_status_code": 500}},
            },
            "",
        ),
        ({"message": "x", "codex_error_info": "internal_server_error"}, ""),
    ],
)
def test_only_a_429_or_a_usage_limit_is_a_limit(tmp_path, error, limit):
    read = _read(tmp_path, _event({"type": "task_complete", "turn_id": "t1", "error": error}))
    assert read.messages[-1].limit == limit


def test_the_last_token_count_gives_context_and_the_accounts_windows():
    from providers.codex.transcript import last_usage
    from providers.schema import Quota

    info = {"last_token_usage": {"total_tokens": 25_840}, "model_context_window": 258_400}
    api_key = {"primary": None, "secondary": None}
    tail = _event({"type": "token_count", "info": info, "rate_limits": api_key})
    usage = last_usage(tail)
    assert usage is not None
    assert (usage.context_tokens, usage.context_window, usage.context_percent) == (25_840, 258_400, 10.0)
    assert usage.quotas is None  # an API key: not reported
    plan = {"primary": _window(12.5, 300, 1_800_000_000), "secondary": None}
    later = last_usage(tail + _event({"type": "token_count", "info": None, "rate_limits": plan}))
    assert later is not None and later.context_tokens is None
    assert later.quotas == (Quota("5-hour", 12.5, 1_800_000_000),)
    assert last_usage(b"") is None


def _item(payload: dict[str, object]) -> bytes:
    import orjson

    return (
        orjson.dumps({"timestamp": "2026-12-05T00:00:00Z", "type": "response_item", "payload": payload})
        + b"\n"
    )


def test_a_result_is_named_by_the_newest_of_the_last_recent_tools(tmp_path):
    from providers.codex.transcript import RECENT_TOOLS

    def call(call_id: str, name: str) -> bytes:
        return _item({"type": "function_call", "name": name, "arguments": "{}", "call_id": call_id})

    def output(call_id: str) -> bytes:
        return _item({"type": "function_call_output", "call_id": call_id, "output": "ok"})

    calls = [call("call_old", "apply_patch")] + [
        call(f"call_{n}", "exec_command") for n in range(RECENT_TOOLS - 1)
    ]
    read = _read(
        tmp_path, *calls, call("call_0", "view_image"), output("call_0"), output("call_old"), output("call_1")
    )
    named = [m.tool_name for m in read.messages if m.kind.value == "tool_result"]
    # call_0's newest call is view_image; call_old left the window when call_0 was called again.
    assert named == ["view_image", "", "exec_command"]
