"""Gemini session files (captured live through the adapter, paths replaced by placeholders) read
as their reviewed `<name>.expected.json` says, whole, line by line and split at random bytes:
reading in pieces equals one whole read."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.gemini.tests.regen_expected import expected_path, fixture_paths, observed
from providers.gemini.transcript import read_transcript
from providers.schema import Cursor

FIXTURES = fixture_paths()


def _id(p: Path) -> str:
    return f"{p.parent.name}/{p.name}"


def test_there_are_fixtures_and_each_has_its_reviewed_expectation() -> None:
    assert FIXTURES
    for fixture in FIXTURES:
        assert expected_path(fixture).exists(), (
            f"no {expected_path(fixture).name}: run regen_expected, review"
        )


@pytest.mark.parametrize("fixture", FIXTURES, ids=[_id(p) for p in FIXTURES])
def test_it_reads_the_fixture_as_expected(fixture: Path) -> None:
    assert observed(fixture) == orjson.loads(expected_path(fixture).read_bytes())


def _read_in_pieces(data: bytes, cuts: list[int], growing: Path):
    growing.write_bytes(b"")
    cursor, messages, read = Cursor(), [], None
    for start, stop in zip([0, *cuts], [*cuts, len(data)], strict=True):
        with growing.open("ab") as f:
            f.write(data[start:stop])
        while True:
            read = read_transcript(str(growing), cursor)
            messages.extend(read.messages)
            if read.cursor == cursor or read.cursor.offset == cursor.offset:
                cursor = read.cursor
                break
            cursor = read.cursor
    return messages, read


@pytest.mark.parametrize("fixture", FIXTURES, ids=[_id(p) for p in FIXTURES])
def test_reading_line_by_line_equals_one_read(fixture: Path, tmp_path: Path) -> None:
    data = fixture.read_bytes()
    whole = read_transcript(str(fixture), Cursor())
    cuts = [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]
    messages, last = _read_in_pieces(data, cuts, tmp_path / fixture.name)
    assert messages == whole.messages
    assert (last.state, last.since, last.running) == (whole.state, whole.since, whole.running)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
@pytest.mark.parametrize("fixture", FIXTURES, ids=[_id(p) for p in FIXTURES])
def test_reading_split_at_random_bytes_equals_one_read(fixture: Path, tmp_path: Path, data) -> None:
    raw = fixture.read_bytes()
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(raw) - 1), max_size=30))))
    whole = read_transcript(str(fixture), Cursor())
    messages, last = _read_in_pieces(raw, cuts, tmp_path / f"split-{fixture.name}")
    assert messages == whole.messages
    assert (last.state, last.since, last.running) == (whole.state, whole.since, whole.running)
