"""Write `<name>.expected.json` beside each Codex rollout fixture, for review (then commit it).

    .venv/bin/python -m providers.codex.tests.regen_expected

Fixtures: compat/codex/fixtures/<version>/*.jsonl (captured by compat; their expectations live
here, in expected/<version>/) and
providers/codex/tests/data/*.jsonl (captured live through the adapter, paths replaced by
placeholders, plus the synthesized edge cases).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from compat.fixture_reads import observed_read, write_expected
from providers.codex.transcript import read_transcript
from providers.schema import Cursor

DATA = Path(__file__).with_name("data")
EXPECTED = Path(__file__).with_name("expected")
COMPAT_FIXTURES = Path(__file__).resolve().parents[3] / "compat" / "codex" / "fixtures"


def fixture_paths() -> list[Path]:
    return sorted(COMPAT_FIXTURES.glob("*/*.jsonl")) + sorted(DATA.glob("*.jsonl"))


def expected_path(fixture: Path) -> Path:
    """Beside the fixture for the adapter's own; for compat's captures (compat's directory holds
    only what it captured) under expected/<version>/ here."""
    name = fixture.name.removesuffix(".jsonl") + ".expected.json"
    if fixture.is_relative_to(COMPAT_FIXTURES):
        return EXPECTED / fixture.parent.name / name
    return fixture.with_name(name)


def intents_of(fixture: Path) -> dict[str, str]:
    """The answers lab played in the captured run (call_id → allow | deny), as the provider
    passes them to the reader; {} when lab answered nothing."""
    path = fixture.with_name(fixture.name.removesuffix(".jsonl") + ".intents.json")
    return orjson.loads(path.read_bytes()) if path.exists() else {}


def observed(fixture: Path) -> dict[str, Any]:
    return observed_read(read_transcript(str(fixture), Cursor(), intents_of(fixture)))


def main() -> None:
    write_expected(fixture_paths(), expected_path, observed)


if __name__ == "__main__":
    main()
