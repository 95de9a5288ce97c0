"""Codex rollouts (captured live, paths replaced by placeholders, and synthesized edge cases)
read as their reviewed `<name>.expected.json` says, whole, line by line and split at random
bytes: reading in pieces equals one whole read (the tests are compat.fixture_reads')."""

from __future__ import annotations

from pathlib import Path

from compat.fixture_reads import fixture_tests
from providers.codex.tests.regen_expected import expected_path, fixture_paths, observed
from providers.codex.transcript import read_transcript
from providers.schema import Cursor

FIXTURES = fixture_paths()
(
    test_there_are_fixtures_and_each_has_its_reviewed_expectation,
    test_it_reads_the_fixture_as_expected,
    test_reading_line_by_line_equals_one_read,
    test_reading_split_at_random_bytes_equals_one_read,
) = fixture_tests(FIXTURES, expected_path, observed, read_transcript)


def test_a_partial_last_line_is_held_back(tmp_path: Path) -> None:
    source = next(p for p in FIXTURES if p.name.startswith("turns__"))
    data = source.read_bytes()
    cut = data.index(b'"role":"user","content":[{"type":"input_text","text":"CAP-TEXT')
    path = tmp_path / "partial.jsonl"
    path.write_bytes(data[:cut])
    first = read_transcript(str(path), Cursor())
    assert all("CAP-TEXT" not in m.text for m in first.messages)
    assert first.cursor.offset == data.rindex(b"\n", 0, cut) + 1  # stopped at the line's start
    path.write_bytes(data)
    rest = read_transcript(str(path), first.cursor)
    assert rest.messages[0].text.startswith("CAP-TEXT") and rest.messages[0].seq == 0
