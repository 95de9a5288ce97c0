"""Properties: incremental reads equal one whole read; arbitrary bytes never raise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.claude_code.dialogs import Intent
from providers.claude_code.tests import entries as E
from providers.claude_code.transcript import read_transcript
from providers.schema import Cursor, Dialog, DialogKind, Message, MessageKind, RunState, TranscriptRead

MAX_LINE = 400  # small, so some generated lines are oversized
TOOL_IDS = ["toolu_a", "toolu_b", "toolu_c"]
COLOR = E.question("Color?", ["Red", "Green"])
TOPPINGS = E.question("Toppings?", ["Cheese", "Ham"], multi=True)
INTENTS = {
    "toolu_a": Intent("toolu_a", DialogKind.QUESTION, answers=(("Color?", "Green"),)),
    "toolu_b": Intent("toolu_b", DialogKind.QUESTION, answers=(("Toppings?", frozenset({"Ham"})),)),
}

words = st.text(alphabet="abc xyz\n<>[]/é", max_size=30)
tool_id = st.sampled_from(TOOL_IDS)
stop = st.sampled_from(["end_turn", "tool_use", None, "max_tokens"])
msg_id = st.sampled_from(["msg_1", "msg_2", "msg_3"])


def _entry_strategies() -> st.SearchStrategy[dict[str, Any] | bytes]:
    return st.one_of(
        words.map(E.prompt),
        words.map(lambda w: E.prompt(w, promptSource="queued")),
        words.map(lambda w: E.prompt(f'<pasted_content id="ab">\n{w}\n</pasted_content id="ab">')),
        st.builds(E.command_echo, st.sampled_from(["clear", "model", "context"]), words),
        words.map(E.stdout),
        st.just(E.caveat()),
        st.just(E.meta("Please say X\n", turnCompanion=True)),
        st.booleans().map(E.interrupted),
        st.just(E.turn_duration()),
        st.just(E.system("stop_hook_summary")),
        words.map(
            lambda w: E.system(
                "local_command", content=f"<local-command-stdout>\x1b[1m{w}</local-command-stdout>"
            )
        ),
        st.builds(
            lambda w, m, i, s: E.assistant(E.text(w), message_id=m, index=i, stop_reason=s),
            words,
            msg_id,
            st.integers(0, 2),
            stop,
        ),
        st.builds(
            lambda t, m, i: E.assistant(
                E.tool_use(t, "Bash", {"command": "ls"}), message_id=m, index=i, stop_reason="tool_use"
            ),
            tool_id,
            msg_id,
            st.integers(0, 2),
        ),
        st.builds(lambda t: E.ask(t, COLOR), tool_id),
        st.builds(lambda t: E.ask(t, COLOR, TOPPINGS), tool_id),
        st.builds(lambda t: E.ask(t, TOPPINGS), tool_id),
        tool_id.map(E.plan),
        st.builds(
            lambda t, a: E.answered(t, [COLOR], {"Color?": a}), tool_id, st.sampled_from(["Red", "Green"])
        ),
        st.builds(
            lambda t, a: E.answered(t, [TOPPINGS], {"Toppings?": a}),
            tool_id,
            st.sampled_from(["Ham", "Cheese, Ham"]),
        ),
        tool_id.map(E.declined),
        st.builds(lambda t, w: E.tool_result(t, w, tool_use_result={"stdout": w}), tool_id, words),
        st.sampled_from(
            ["mode", "permission-mode", "last-prompt", "cost-state", "api-request-shape", "attachment"]
        ).map(E.bookkeeping),
        st.sampled_from(["enqueue", "dequeue"]).map(
            lambda op: {"type": "queue-operation", "operation": op, "content": "q"}
        ),
        # Corrupt and odd lines: not JSON, not an object, blank, oversized.
        st.binary(max_size=40).filter(lambda b: b"\n" not in b).map(lambda b: b + b"\n"),
        st.sampled_from(
            [b"[1]\n", b"null\n", b"\n", b"  \n", b'{"type":"mode"\n', b'{"type":"user","message":7}\n']
        ),
        st.integers(MAX_LINE + 1, 3 * MAX_LINE).map(lambda n: E.prompt("o" * n)),
    )


def _to_bytes(items: list[dict[str, Any] | bytes]) -> bytes:
    return b"".join(item if isinstance(item, bytes) else E.line(item) for item in items)


def _whole(path: Path) -> TranscriptRead:
    return read_transcript(str(path), Cursor(), INTENTS, max_line_bytes=MAX_LINE)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(_entry_strategies(), max_size=25),
    cuts=st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=8),
    tail=st.binary(max_size=30).filter(lambda b: b"\n" not in b),
)
def test_incremental_reads_equal_one_whole_read(
    tmp_path_factory: pytest.TempPathFactory,
    items: list[dict[str, Any] | bytes],
    cuts: list[int],
    tail: bytes,
) -> None:
    data = _to_bytes(items) + tail  # a partial last line is held back either way
    base = tmp_path_factory.mktemp("prop")
    whole_path, inc_path = base / "whole.jsonl", base / "inc.jsonl"
    whole_path.write_bytes(data)
    whole = _whole(whole_path)

    inc_path.touch()
    cursor = Cursor()
    messages: list[Message] = []
    prev = 0
    for point in sorted({c % (len(data) + 1) for c in cuts} | {len(data)}):
        with open(inc_path, "ab") as f:
            f.write(data[prev:point])
        prev = point
        result = read_transcript(str(inc_path), cursor, INTENTS, max_line_bytes=MAX_LINE)
        assert not result.reset
        cursor = result.cursor
        messages += result.messages
    assert messages == whole.messages
    assert [m.seq for m in messages] == list(range(len(messages)))
    assert result.state == whole.state
    assert result.dialog == whole.dialog
    assert cursor.offset == whole.cursor.offset
    assert cursor.provider_state == whole.cursor.provider_state


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=600))
def test_arbitrary_bytes_never_raise(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("bytes") / "t.jsonl"
    path.write_bytes(data)
    result = read_transcript(str(path), Cursor(), INTENTS, max_line_bytes=64)
    assert result.cursor.offset <= len(data)


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(["", "x", "<", "[Request interrupted by user"])
)
keys = st.sampled_from(
    [
        "type",
        "message",
        "content",
        "isMeta",
        "uuid",
        "subtype",
        "toolUseResult",
        "apiBlockIndex",
        "operation",
        "timestamp",
        "isSidechain",
        "turnCompanion",
        "role",
        "stop_reason",
        "id",
        "tool_use_id",
        "input",
        "name",
        "questions",
        "text",
        "is_error",
        "answers",
        "options",
    ]
)
type_values = st.sampled_from(
    [
        "user",
        "assistant",
        "system",
        "queue-operation",
        "text",
        "tool_use",
        "tool_result",
        "AskUserQuestion",
        "ExitPlanMode",
        "enqueue",
        "turn_duration",
        "local_command",
    ]
)
shapes = st.recursive(
    scalars | type_values,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)


# Near-misses of the real shapes: an entry type the reader handles, a "message" whose blocks
# have block types it handles, and fields that are real text or odd values. Random keys alone
# reached no branch that makes a message (300 examples: none), so the test checked only that
# nothing raised.
odd_or_text = words | shapes
blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "image", "thinking"])},
    optional={k: odd_or_text for k in ("text", "id", "name", "input", "tool_use_id", "content", "is_error")},
)
near_misses = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["user", "assistant", "system", "queue-operation"]),
        "message": st.fixed_dictionaries(
            {"content": st.lists(blocks, min_size=1, max_size=3) | odd_or_text},
            optional={"role": odd_or_text, "id": odd_or_text, "stop_reason": stop | shapes},
        ),
    },
    optional={
        **{k: odd_or_text for k in ("uuid", "isMeta", "toolUseResult", "content", "timestamp")},
        "operation": st.sampled_from(["enqueue", "dequeue"]) | shapes,
        "subtype": st.sampled_from(["local_command", "turn_duration", "stop_hook_summary"]) | shapes,
    },
)


@settings(max_examples=150, deadline=None)
@given(entries=st.lists(near_misses | st.dictionaries(keys, shapes, max_size=6), max_size=6))
def test_odd_entry_shapes_read_whole_into_well_formed_messages(
    tmp_path_factory: pytest.TempPathFactory, entries: list[dict[str, Any]]
) -> None:
    path = tmp_path_factory.mktemp("shapes") / "t.jsonl"
    data = b"".join(orjson.dumps(e) + b"\n" for e in entries)
    path.write_bytes(data)
    result = read_transcript(str(path), Cursor(), INTENTS)
    # Every line consumed (none stalls the run), numbered without a gap, each message of the
    # schema's types: what lab renders and indexes, whatever shape the line had.
    assert result.cursor.offset == len(data) and not result.reset
    assert [m.seq for m in result.messages] == list(range(len(result.messages)))
    assert result.cursor.next_seq == len(result.messages)
    for m in result.messages:
        assert isinstance(m.kind, MessageKind) and isinstance(m.text, str), m
        assert isinstance(m.tool_name, str) and isinstance(m.tool_input, str), m
        assert isinstance(m.is_error, bool), m
    assert isinstance(result.state, RunState)
    assert result.dialog is None or isinstance(result.dialog, Dialog)
    # Nothing is left for a second read.
    again = read_transcript(str(path), result.cursor, INTENTS)
    assert again.messages == [] and again.state == result.state and again.dialog == result.dialog
