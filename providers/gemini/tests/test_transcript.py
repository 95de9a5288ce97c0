"""Edge cases of the session reader beyond the captured fixtures."""

from __future__ import annotations

from pathlib import Path

import orjson

from providers.gemini.transcript import read_transcript, records_prompt
from providers.outbox import normalize
from providers.schema import Cursor, MessageKind, RunState


def write(path: Path, *entries: object) -> str:
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))
    return str(path)


META = {"sessionId": "s", "kind": "main"}


def test_an_upserted_record_shows_its_text_once_and_its_calls_when_they_finish(tmp_path: Path) -> None:
    first = {"id": "g1", "timestamp": "2026-01-01T00:00:01.000Z", "type": "gemini", "content": "Let me look."}
    call = {
        "id": "c1",
        "name": "read_file",
        "args": {"file_path": "a.txt"},
        "status": "success",
        "result": [{"functionResponse": {"response": {"output": "hello"}}}],
    }
    path = write(
        tmp_path / "s.jsonl",
        META,
        {"id": "u1", "timestamp": "2026-01-01T00:00:00.000Z", "type": "user", "content": [{"text": "hi"}]},
        first,
        {**first, "toolCalls": [call]},
    )
    read = read_transcript(path, Cursor())
    assert [(m.kind, m.text, m.tool_input) for m in read.messages] == [
        (MessageKind.USER_TEXT, "hi", ""),
        (MessageKind.ASSISTANT_TEXT, "Let me look.", ""),
        (MessageKind.TOOL_USE, "", "a.txt"),
        (MessageKind.TOOL_RESULT, "hello", ""),
    ]
    assert read.state == RunState.WORKING  # the results go back to the model


def test_the_replay_after_a_cancel_is_not_shown_and_a_later_prompt_is(tmp_path: Path) -> None:
    at = "2026-01-01T00:00:05.000Z"
    path = write(
        tmp_path / "s.jsonl",
        META,
        {"id": "u1", "timestamp": "2026-01-01T00:00:00.000Z", "type": "user", "content": [{"text": "first"}]},
        {"id": "i1", "timestamp": at, "type": "info", "content": "Request cancelled."},
        {"id": "r1", "timestamp": "2026-01-01T00:00:05.001Z", "type": "user", "content": [{"text": "first"}]},
        {
            "id": "u2",
            "timestamp": "2026-01-01T00:00:09.000Z",
            "type": "user",
            "content": [{"text": "second"}],
        },
    )
    read = read_transcript(path, Cursor())
    assert read.messages[-1].text == "second"
    assert [m.text for m in read.messages if m.kind == MessageKind.USER_TEXT] == ["first", "second"]


def test_a_corrupt_line_is_an_error_line_and_never_raises(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(orjson.dumps(META) + b"\n{not json\n")
    read = read_transcript(str(path), Cursor())
    assert [m.is_error for m in read.messages] == [True]


def test_the_receipt_is_the_operators_text_not_the_clis_context() -> None:
    line = orjson.dumps(
        {"id": "u", "type": "user", "content": [{"text": "<session_context>x"}, {"text": "hi there"}]}
    )
    assert records_prompt(line, normalize("hi there"))
    assert not records_prompt(line, normalize("<session_context>x"))


def test_a_record_upserted_in_a_later_read_is_not_shown_again(tmp_path: Path) -> None:
    """The ids already shown ride in the cursor: the CLI writes a record again (more calls,
    a finished call) after the page has read the first copy."""
    first = {"id": "g1", "timestamp": "2026-01-01T00:00:01.000Z", "type": "gemini", "content": "Let me look."}
    user = {"id": "u1", "timestamp": "2026-01-01T00:00:00.000Z", "type": "user", "content": [{"text": "hi"}]}
    path = write(tmp_path / "s.jsonl", META, user, first)
    before = read_transcript(path, Cursor())
    with open(path, "ab") as f:
        f.write(orjson.dumps({**first, "content": "Let me look."}) + b"\n")
        f.write(orjson.dumps(user) + b"\n")
    after = read_transcript(path, before.cursor)
    assert [m.text for m in before.messages] == ["hi", "Let me look."]
    assert after.messages == []
