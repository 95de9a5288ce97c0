"""compat.claude_code.drift: what changed in the CLI's menu, named command by command (no CLI needed)."""

from __future__ import annotations

from compat.claude_code.drift import catalog_drift
from providers.claude_code.commands import Pinned

PINNED = (
    Pinned("clear", "Start a new session with empty context; the old one stays in /resume"),
    Pinned("model", "Set the AI model", tui_pattern=r"Set the AI model \(currently .+\)"),
    Pinned("help", "Show help"),
)
SEEN = [
    ("clear", "Start a new session with empty context; the old one stays in /resume"),
    ("model", "Set the AI model (currently Opus 5.5)"),
    ("help", "Show help"),
]


def test_an_equal_menu_has_no_drift():
    assert catalog_drift(PINNED, SEEN) == []


def test_a_changed_description_is_named_with_both_texts():
    new = "Start a new session with empty context; loops carry over, and the old one stays in /resume"
    seen = [("clear", new), *SEEN[1:]]
    assert catalog_drift(PINNED, seen) == [
        f"/clear description: pinned {PINNED[0].description!r}, the CLI shows {new!r}"
    ]


def test_added_gone_and_moved_commands_are_each_named():
    seen = [SEEN[2], SEEN[0], ("loop", "Run a prompt on a schedule")]
    assert catalog_drift(PINNED, seen) == [
        "new /loop ('Run a prompt on a schedule')",
        "gone /model",
        "order changed from /clear",
    ]


def test_a_state_bearing_description_is_matched_by_its_pattern():
    seen = [SEEN[0], ("model", "Pick a model"), SEEN[2]]
    [drift] = catalog_drift(PINNED, seen)
    assert drift.startswith("/model description 'Pick a model' does not match")
