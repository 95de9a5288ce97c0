"""Live: the raw Codex binary under tmux reaches its composer with no first-run screen, leaves no
process behind, and writes its rollout lazily at the first prompt (COMPAT.md §1, §4, §7, §11)."""

from __future__ import annotations

import re
import time

import pytest

from compat.codex.home import PINNED_VERSION, installed_version
from compat.codex.live import FIRST_RUN_RE, alive, codex_processes, events, message_texts
from compat.codex.scripted_model import text, when

pytestmark = pytest.mark.live


def session_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[4])
    except (OSError, IndexError, ValueError):
        return None


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"


def test_the_binary_under_test_is_the_pinned_version():
    assert installed_version() == PINNED_VERSION


def test_spawn_reaches_the_composer_with_no_first_run_screen(codex_tui, codex_home):
    tui = codex_tui()
    screen = tui.pane()
    assert not FIRST_RUN_RE.search(screen), screen
    assert f"OpenAI Codex (v{PINNED_VERSION})" in screen
    assert str(codex_home.worktree) in screen
    # Seeding trust is all it takes: Codex rewrites nothing it would ask about.
    config = (codex_home.codex_home / "config.toml").read_text()
    assert config.count("trusted_hash") == len(codex_home.spool.events)


def test_ending_the_tmux_session_leaves_no_codex_process(codex_tui, codex_home, codex_model):
    # A whole turn first: without --no-daemon the TUI has started its app-server daemon by then
    # (it comes up a second or two after the footer).
    codex_model.script.add(when("KILL-TOKEN-1", text("kill reply")))
    tui = codex_tui()
    tui.prompt("hello KILL-TOKEN-1")
    [rollout] = tui.wait_rollouts(1)
    tui.wait_for(rollout, lambda ls: events(ls, "task_complete"))
    assert tui.pane_pid in codex_processes(codex_home.codex_home)
    # With --no-daemon nothing codex starts leaves the pane's session (the default daemon runs
    # under setsid, out of tmux's reach).
    for pid in codex_processes(codex_home.codex_home):
        assert session_of(pid) in (session_of(tui.pane_pid), None), cmdline(pid)
    tui.tmux("kill-session", "-t", "probe", check=False)
    deadline = time.monotonic() + 15
    # A process that is exiting has lost its exe link before /proc shows it gone: wait for both.
    while (codex_processes(codex_home.codex_home) or alive(tui.pane_pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert codex_processes(codex_home.codex_home) == []
    assert not alive(tui.pane_pid)


def test_first_submit_creates_the_rollout_named_by_session_start(codex_tui, codex_home, codex_model):
    codex_model.script.add(when("SPAWN-TOKEN-1", text("spawn reply one")))
    tui = codex_tui()
    assert tui.rollouts() == [], "no rollout before the first prompt"
    tui.prompt("hello SPAWN-TOKEN-1")
    [rollout] = tui.wait_rollouts(1)
    [start] = codex_home.spool.wait("SessionStart")
    payload = start["payload"]
    assert payload["transcript_path"] == str(rollout)
    assert payload["source"] == "startup"
    assert payload["cwd"] == str(codex_home.worktree)
    thread_id = payload["session_id"]
    [submit] = codex_home.spool.wait("UserPromptSubmit")
    assert submit["payload"]["prompt"] == "hello SPAWN-TOKEN-1"
    assert submit["payload"]["session_id"] == thread_id and submit["payload"]["turn_id"]
    assert rollout.name.endswith(f"-{thread_id}.jsonl")
    assert re.fullmatch(r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-[0-9a-f-]{36}\.jsonl", rollout.name)
    lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
    meta = lines[0]
    assert meta["type"] == "session_meta"
    assert meta["payload"]["id"] == thread_id
    assert meta["payload"]["cli_version"] == PINNED_VERSION
    assert meta["payload"]["source"] == "cli"
    assert meta["payload"]["originator"] == "codex-tui"
    assert "hello SPAWN-TOKEN-1" in message_texts(lines, "user")
    assert message_texts(lines, "assistant") == ["spawn reply one"]
    # The title side request ran beside the turn and did not eat the script.
    kinds = [r["kind"] for r in codex_model.requests if r.get("kind") in ("turn", "side")]
    assert kinds.count("turn") == 1 and kinds.count("side") == 1
    turn = codex_model.turn_requests()[0]
    assert turn["headers"]["authorization"] == f"Bearer {codex_home.env['LAB_SCRIPTED_OPENAI_KEY']}"
    assert turn["headers"]["thread-id"] == thread_id
