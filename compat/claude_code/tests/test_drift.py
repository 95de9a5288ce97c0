"""compat.claude_code.drift: what changed in the CLI's menu, named command by command (no CLI needed)."""

from __future__ import annotations

from compat.claude_code.drift import alias_drift, catalog_drift, command_aliases
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


# The shapes the bundle declares commands in (compat §10), trimmed from 2.1.332's.
BUNDLE = (
    b'var a={type:"local-jsx",name:"exit",aliases:["quit"],get description(){return x()},immediate:!0},'
    b'b={type:"local",name:"exit",supportsNonInteractive:!0,load:()=>import("/$bunfs/root/c.js")};'
    b'var c={description:"Restore {earlier} code",name:"rewind",aliases:["checkpoint","undo"],type:"local"};'
    b'var d={name:"cpp",aliases:["cc","c++"],keywords:{type:"local"}};'  # a highlighter language
    b'var e={type:"prompt",name:"statusline",aliases:[],description:"Set up the status line"};'
    b'f(["x",{aliases:["nope"]}]);'
)


def test_it_reads_each_commands_aliases_from_the_bundle_whatever_the_key_order():
    assert command_aliases(BUNDLE) == {"exit": ("quit",), "rewind": ("checkpoint", "undo")}


def test_pinned_aliases_that_differ_from_the_binary_are_named():
    pinned = (Pinned("exit", "Exit the CLI"), Pinned("rewind", "R", aliases=("undo", "checkpoint")))
    assert alias_drift(pinned, {"exit": ("quit",), "rewind": ("checkpoint", "undo")}) == [
        "/exit aliases: pinned [], the CLI has ['quit']"
    ]
