"""Gemini session files (captured live through the adapter, paths replaced by placeholders) read
as their reviewed `<name>.expected.json` says, whole, line by line and split at random bytes:
reading in pieces equals one whole read (the tests are compat.fixture_reads')."""

from __future__ import annotations

from compat.fixture_reads import fixture_tests
from providers.gemini.tests.regen_expected import expected_path, fixture_paths, observed
from providers.gemini.transcript import read_transcript

FIXTURES = fixture_paths()
(
    test_there_are_fixtures_and_each_has_its_reviewed_expectation,
    test_it_reads_the_fixture_as_expected,
    test_reading_line_by_line_equals_one_read,
    test_reading_split_at_random_bytes_equals_one_read,
) = fixture_tests(FIXTURES, expected_path, observed, read_transcript)
