"""Live: the pinned command catalog equals what the real TUI of the pinned version offers (compat §10).

The test types "/" and walks the autocomplete with Down, reading its own probe's pane (the
harness may; production code never does). A wide window keeps every description whole.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat.claude_code.drift import alias_drift, binary_command_aliases, catalog_drift, norm
from compat.claude_code.home import claude_binary
from compat.claude_code.live import ClaudeTUI, user_texts
from compat.live import tui_factory
from providers.claude_code.commands import BUILTINS, BUNDLED, command_catalog
from providers.schema import CommandRole

pytestmark = pytest.mark.live

WIDTH, HEIGHT = 250, 50
# A menu row: two spaces, the selection mark or a space, "/name", two+ spaces, the description,
# and for custom rows a " (project)" / " (user)" suffix (compat §9).
ROW_RE = re.compile(r"^  (?P<mark>❯|\s)\s(?P<name>/\S+)\s{2,}(?P<desc>.*?)\s*$")
SOURCE_RE = re.compile(r"^(?P<desc>.*) \((?P<source>project|user)\)$")
COMPOSER_RE = re.compile(r"^❯\s(?P<text>.*?)\s*$")


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def wide_tui(claude_home) -> Iterator[Any]:
    """Like ``live_tui`` but 250 columns wide, so no menu description is cut."""

    def make() -> ClaudeTUI:
        return ClaudeTUI(claude_home.env, claude_home.worktree, width=WIDTH, height=HEIGHT)

    with tui_factory(make) as start:

        def start_live(*extra: str) -> ClaudeTUI:
            tui = start(*extra)
            tui.wait_input_live()  # the footer can draw a beat before the composer takes keys
            return tui

        yield start_live


def selected_row(pane: str) -> tuple[str, str] | None:
    for line in pane.splitlines():
        m = ROW_RE.match(line)
        if m and m.group("mark") == "❯":
            return m.group("name")[1:], m.group("desc")
    return None


def walk_menu(tui: ClaudeTUI, limit: int = 300) -> list[tuple[str, str]]:
    """Every (name, description) row the "/" menu offers, in order, until it wraps."""
    tui.send_literal("/")
    deadline = time.monotonic() + 10
    row = None
    while row is None:
        if time.monotonic() > deadline:
            raise TimeoutError("the / menu never opened:\n" + tui.pane())
        time.sleep(0.05)
        row = selected_row(tui.pane())
    rows = [row]
    for _ in range(limit):
        tui.send_keys("Down")
        deadline = time.monotonic() + 3
        while True:
            time.sleep(0.03)
            nxt = selected_row(tui.pane())
            if nxt is not None and nxt != rows[-1]:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"Down did not move past {rows[-1]}:\n" + tui.pane())
        if nxt == rows[0]:
            close_menu(tui)
            return rows
        rows.append(nxt)
    raise AssertionError(f"the menu did not wrap within {limit} rows")


def close_menu(tui: ClaudeTUI) -> None:
    """Ctrl-U clears the "/" and the menu goes with it. (Esc right before it would be read as
    a Meta prefix, and Esc alone leaves the "/" behind.)"""
    tui.send_keys("C-u")
    deadline = time.monotonic() + 3
    while any(m and m.group("text") for m in map(COMPOSER_RE.match, tui.pane().splitlines())):
        if time.monotonic() > deadline:
            raise TimeoutError("the composer did not clear:\n" + tui.pane())
        time.sleep(0.05)


def split_menu(rows: list[tuple[str, str]]) -> tuple[list, list, list]:
    """(builtins, custom (name, description, source), bundled): custom rows carry the suffix."""
    first = next(i for i, (_, d) in enumerate(rows) if SOURCE_RE.match(d))
    last = max(i for i, (_, d) in enumerate(rows) if SOURCE_RE.match(d))
    custom = []
    for name, desc in rows[first : last + 1]:
        m = SOURCE_RE.match(desc)
        assert m, f"a non-custom row among the custom ones: {name} {desc}"
        custom.append((name, m.group("desc"), m.group("source")))
    return rows[:first], custom, rows[last + 1 :]


def composer_text(tui: ClaudeTUI) -> str | None:
    lines = [m.group("text") for m in map(COMPOSER_RE.match, tui.pane().splitlines()) if m]
    return lines[-1] if lines else None


def wait_composer(tui: ClaudeTUI, done, what: str, *, settle: int = 2, timeout: float = 5) -> str | None:
    """Poll the composer until ``done(text)`` holds for ``settle`` reads in a row."""
    deadline = time.monotonic() + timeout
    streak, last = 0, object()
    while True:
        time.sleep(0.08)
        now = composer_text(tui)
        streak = streak + 1 if now == last and done(now) else (1 if done(now) else 0)
        last = now
        if streak >= settle:
            return now
        if time.monotonic() > deadline:
            raise TimeoutError(f"composer never showed {what}:\n" + tui.pane())


def cursor_x(tui: ClaudeTUI) -> int:
    out = tui.tmux("display-message", "-p", "-t", tui.target, "#{cursor_x}").stdout.strip()
    return int(out or -1)


def composer_hint(tui: ClaudeTUI, name: str) -> str:
    """Type "/name " and read the argument hint the composer draws after it (compat §10).

    Two TUI lags to outwait: input can take half a second to be read (the cursor, hidden but
    still moved, shows when the space is in), and the previous command's hint can stay for a
    frame or two after that (so the text must then hold still).
    """
    tui.send_keys("C-u")
    wait_composer(tui, lambda t: not t, "an empty line")
    typed = f"/{name} "
    tui.send_literal(typed)
    deadline = time.monotonic() + 5
    while cursor_x(tui) != len("❯ ") + len(typed):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the TUI never read {typed!r}:\n" + tui.pane())
        time.sleep(0.05)
    text = wait_composer(tui, lambda t: bool(t) and t.startswith(f"/{name}"), typed, settle=6)
    assert text is not None
    return text.removeprefix(f"/{name}").strip()


PROJECT_CMD = (
    "---\ndescription: Probe project command description\nargument-hint: [file] [mode]\n---\nSay PROBECMD\n"
)
PROJECT_SKILL = (
    "---\nname: probe-skill\ndescription: Probe project skill description\nargument-hint: [message]\n---\n"
    "When invoked, say PROBESKILL.\n"
)
USER_CMD = "---\ndescription: User level probe\n---\nSay USERPROBE\n"


def seed_probe_commands(home: Path, wt: Path) -> None:
    write(wt, ".claude/commands/probe-cmd.md", PROJECT_CMD)
    write(wt, ".claude/commands/frontend/lint.md", "Lint the frontend first line\n")
    write(wt, ".claude/skills/probe-skill/SKILL.md", PROJECT_SKILL)
    write(
        wt, ".claude/skills/hidden-skill/SKILL.md", "---\ndescription: hidden\nuser-invocable: false\n---\n"
    )
    write(home, ".claude/commands/user-probe.md", USER_CMD)


def test_the_menu_equals_the_pinned_tables_and_the_worktree_commands(claude_home, wide_tui):
    seed_probe_commands(claude_home.home, claude_home.worktree)
    tui = wide_tui("--permission-mode", "manual")
    builtins, custom, bundled = split_menu(walk_menu(tui))

    drift = [f"builtin: {d}" for d in catalog_drift(BUILTINS, builtins)]
    drift += [f"bundled: {d}" for d in catalog_drift(BUNDLED, bundled)]
    if drift:
        pytest.fail("drift in the pinned catalog (compat §10): " + "; ".join(drift), pytrace=False)

    catalog = command_catalog(claude_home.worktree, home=claude_home.home)
    ours = [(r.name, r.description, r.source) for r in catalog if r.source != "builtin"]
    assert [(n, norm(d), s) for n, d, s in custom] == [(n, norm(d), s) for n, d, s in ours]
    assert ours == [
        ("user-probe", "User level probe", "user"),
        ("frontend:lint", "Lint the frontend first line", "project"),
        ("probe-cmd", "Probe project command description", "project"),
        ("probe-skill", "Probe project skill description", "project"),
    ]


def test_every_argument_hint_matches_the_composer(claude_home, wide_tui):
    seed_probe_commands(claude_home.home, claude_home.worktree)
    tui = wide_tui("--permission-mode", "manual")
    catalog = command_catalog(claude_home.worktree, home=claude_home.home)
    seen = {row.name: composer_hint(tui, row.name) for row in catalog}
    assert seen == {row.name: row.argument_hint for row in catalog}
    # compat §10: "[file] [mode]" is not YAML, so it stays text; "[message]" is a one-item list
    # that the CLI stringifies to "message".
    assert (seen["probe-cmd"], seen["probe-skill"]) == ("[file] [mode]", "message")


def test_precedence_and_shadowing_as_the_cli_runs_them(claude_home, wide_tui):
    home, wt = claude_home.home, claude_home.worktree
    write(wt, ".claude/commands/pu.md", "---\ndescription: Project pu\n---\nSay PROJECT-PU\n")
    write(home, ".claude/commands/pu.md", "---\ndescription: User pu\n---\nSay USER-PU\n")
    write(wt, ".claude/commands/ps.md", "---\ndescription: Project command ps\n---\nSay PROJECT-CMD-PS\n")
    write(
        wt, ".claude/skills/ps/SKILL.md", "---\nname: ps\ndescription: Project skill ps\n---\nSay SKILL-PS\n"
    )
    write(wt, ".claude/skills/us/SKILL.md", "---\nname: us\ndescription: Project skill us\n---\nSay P-US\n")
    write(home, ".claude/skills/us/SKILL.md", "---\nname: us\ndescription: User skill us\n---\nSay U-US\n")
    write(wt, ".claude/commands/help.md", "---\ndescription: Project help override\n---\nSay PROJECT-HELP\n")
    write(
        wt, ".claude/commands/clear.md", "---\ndescription: Project clear override\n---\nSay PROJECT-CLEAR\n"
    )
    tui = wide_tui("--permission-mode", "manual")
    rows = walk_menu(tui)
    _, custom, _ = split_menu(rows)
    catalog = command_catalog(wt, home=home)
    ours = [(r.name, r.description, r.source) for r in catalog if r.source != "builtin"]
    assert (
        custom
        == ours
        == [
            ("pu", "User pu", "user"),
            ("us", "User skill us", "user"),
            ("clear", "Project clear override", "project"),
            ("help", "Project help override", "project"),
            ("ps", "Project skill ps", "project"),
        ]
    )
    # The TUI still lists the shadowed builtins; the catalog keeps one row per name.
    assert [n for n, _ in rows].count("help") == 2
    assert [r.name for r in catalog].count("help") == 1

    # What each name runs, through lab's own submit recipe (bracketed paste + Enter).
    for command, expansion in [
        ("/pu", "Say USER-PU"),
        ("/ps", "Say SKILL-PS"),
        ("/help", "Say PROJECT-HELP"),
    ]:
        tui.prompt(command)
        tui.wait_for(lambda lines, e=expansion: any(e in t for t in user_texts(lines)), timeout=30)
        tui.wait_ready()

    # /clear runs the project command, so the CLEAR role sits on /reset, which clears.
    (clear_row,) = [r for r in catalog if r.role is CommandRole.CLEAR]
    assert clear_row.name == "reset"
    before = set(tui.transcripts())
    tui.prompt("/" + clear_row.name)
    new = tui.wait_for(lambda _lines: [p for p in tui.transcripts() if p not in before], timeout=30)
    # compat §6: the echo lands in the new file, and it names the builtin /clear.
    tui.wait_for(
        lambda lines: any("<command-name>/clear</command-name>" in t for t in user_texts(lines)),
        path=new[0],
        timeout=30,
    )


def test_the_pinned_aliases_are_the_binarys_own():
    # compat §10: /quit runs /exit although no menu row names it; lab refuses a command under
    # every name the CLI's own command table gives it, so the table is re-read from the binary.
    found = binary_command_aliases(claude_binary().resolve())
    drift = alias_drift((*BUILTINS, *BUNDLED), found)
    assert not drift, "drift in the command aliases:\n" + "\n".join(drift)
    assert found["exit"] == ("quit",)
