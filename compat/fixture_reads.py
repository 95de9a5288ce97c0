"""What an adapter's fixture tests check of its transcript reader, written once: each captured or
synthesized transcript reads as its reviewed `<name>.expected.json` says, and reading it whole
equals reading it line by line and split at random bytes (docs/providers.md, the
`read_transcript` obligation). An adapter's `tests/test_fixtures.py` binds the tests to its
fixtures and reader; its `tests/regen_expected.py` writes the expectations with `observed_read`
and `write_expected`. No Django.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.schema import Cursor, Message, TranscriptRead

Reader = Callable[[str, Cursor], TranscriptRead]


def observed_read(read: TranscriptRead) -> dict[str, Any]:
    """A read as its expectation file holds it (a limit only on a line that has one)."""
    return {
        "messages": [
            {
                "seq": m.seq,
                "kind": m.kind.value,
                "text": m.text,
                "tool_name": m.tool_name,
                "tool_input": m.tool_input,
                "timestamp": m.timestamp,
                "native_id": m.native_id,
                "is_error": m.is_error,
                **({"limit": m.limit, "resets_at": m.resets_at} if m.limit else {}),
            }
            for m in read.messages
        ],
        "state": read.state.value,
        "since": read.since,
        "running": read.running,
    }


def write_expected(
    fixtures: Sequence[Path], expected_path: Callable[[Path], Path], observed: Callable[[Path], Any]
) -> None:
    for fixture in fixtures:
        expected_path(fixture).parent.mkdir(parents=True, exist_ok=True)
        expected_path(fixture).write_bytes(
            orjson.dumps(observed(fixture), option=orjson.OPT_INDENT_2) + b"\n"
        )
        print(expected_path(fixture))


def read_in_pieces(read: Reader, data: bytes, cuts: list[int], growing: Path) -> tuple[list[Message], Any]:
    """`data` appended to `growing` piece by piece (cut at `cuts`), read after each piece from
    the cursor the read before left: every message, and the last read."""
    growing.write_bytes(b"")
    cursor, messages, last = Cursor(), [], None
    for start, stop in zip([0, *cuts], [*cuts, len(data)], strict=True):
        with growing.open("ab") as f:
            f.write(data[start:stop])
        while True:
            last = read(str(growing), cursor)
            messages.extend(last.messages)
            if last.cursor == cursor or last.cursor.offset == cursor.offset:
                cursor = last.cursor
                break
            cursor = last.cursor
    return messages, last


def fixture_tests(
    fixtures: Sequence[Path],
    expected_path: Callable[[Path], Path],
    observed: Callable[[Path], Any],
    read: Reader,
) -> tuple[Callable[..., None], ...]:
    """The four tests, for an adapter's test module to bind under their names: that there are
    fixtures with expectations, that each reads as expected, line by line, at random bytes."""
    ids = [f"{p.parent.name}/{p.name}" for p in fixtures]
    each = pytest.mark.parametrize("fixture", fixtures, ids=ids)

    def test_there_are_fixtures_and_each_has_its_reviewed_expectation() -> None:
        assert fixtures
        for fixture in fixtures:
            assert expected_path(fixture).exists(), (
                f"no {expected_path(fixture).name}: run regen_expected, review"
            )

    @each
    def test_it_reads_the_fixture_as_expected(fixture: Path) -> None:
        assert observed(fixture) == orjson.loads(expected_path(fixture).read_bytes())

    @each
    def test_reading_line_by_line_equals_one_read(fixture: Path, tmp_path: Path) -> None:
        data = fixture.read_bytes()
        whole = read(str(fixture), Cursor())
        cuts = [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]
        messages, last = read_in_pieces(read, data, cuts, tmp_path / fixture.name)
        assert messages == whole.messages
        assert (last.state, last.since, last.running) == (whole.state, whole.since, whole.running)

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=st.data())
    @each
    def test_reading_split_at_random_bytes_equals_one_read(fixture: Path, tmp_path: Path, data: Any) -> None:
        raw = fixture.read_bytes()
        cuts = sorted(set(data.draw(st.lists(st.integers(1, len(raw) - 1), max_size=30))))
        whole = read(str(fixture), Cursor())
        messages, last = read_in_pieces(read, raw, cuts, tmp_path / f"split-{fixture.name}")
        assert messages == whole.messages
        assert (last.state, last.since, last.running) == (whole.state, whole.since, whole.running)

    return (
        test_there_are_fixtures_and_each_has_its_reviewed_expectation,
        test_it_reads_the_fixture_as_expected,
        test_reading_line_by_line_equals_one_read,
        test_reading_split_at_random_bytes_equals_one_read,
    )
