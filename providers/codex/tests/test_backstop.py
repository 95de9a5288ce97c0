"""The approval backstop on a captured rollout (one command allowed, one declined): a warning
exactly where the answer lab played and what Codex recorded differ, in either direction."""

from __future__ import annotations

from pathlib import Path

import pytest

from providers.codex.tests.regen_expected import fixture_paths
from providers.codex.transcript import read_transcript
from providers.schema import Cursor, MessageKind

ROLLOUT = next(p for p in fixture_paths() if p.name == "approval__allow_and_deny.jsonl")


def calls(path: Path) -> tuple[str, str]:
    """(the allowed call's id, the declined call's id), from the rollout's own results."""
    read = read_transcript(str(path), Cursor(path=str(path)))
    results = [m for m in read.messages if m.kind == MessageKind.TOOL_RESULT]
    allowed = next(m.native_id for m in results if not m.is_error)
    declined = next(m.native_id for m in results if m.is_error)
    return allowed, declined


def warnings(intents: dict[str, str]) -> dict[str, str]:
    read = read_transcript(str(ROLLOUT), Cursor(path=str(ROLLOUT)), intents)
    return {m.native_id: m.text for m in read.messages if m.kind == MessageKind.LIFECYCLE and m.is_error}


def test_answers_recorded_as_lab_sent_them_are_silent():
    allowed, declined = calls(ROLLOUT)
    assert warnings({allowed: "allow", declined: "deny"}) == {}


@pytest.mark.parametrize(
    ("which", "intent", "said"),
    [
        ("declined", "allow", "lab approved this command, but Codex recorded otherwise"),
        ("allowed", "deny", "lab declined this command, but Codex recorded otherwise"),
    ],
)
def test_an_answer_codex_recorded_otherwise_warns(which, intent, said):
    allowed, declined = calls(ROLLOUT)
    call = allowed if which == "allowed" else declined
    assert warnings({call: intent}) == {f"backstop-{call}": said}
