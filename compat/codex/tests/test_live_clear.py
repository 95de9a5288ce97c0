"""Live: /clear starts a new thread (new rollout, SessionStart source "clear") without a
question; /new in a git worktree asks where to run first (COMPAT.md §5)."""

from __future__ import annotations

import pytest

from compat.codex.live import events, message_texts
from compat.codex.scripted_model import text, when

pytestmark = pytest.mark.live


def first_turn(tui, codex_model, token):
    codex_model.script.add(when(token, text(f"reply {token}")))
    tui.prompt(f"hello {token}")
    [rollout] = tui.wait_rollouts(1)
    tui.wait_for(rollout, lambda ls: events(ls, "task_complete"))
    tui.wait_pane(r"\? for shortcuts", settle=0.3)
    return rollout


def test_clear_starts_a_new_rollout_with_source_clear(codex_tui, codex_home, codex_model):
    tui = codex_tui()
    old = first_turn(tui, codex_model, "CLEAR-1")
    old_bytes = old.read_bytes()
    tui.send_literal("/clear")
    tui.wait_pane(r"/clear\s+clear the terminal and start a new chat", settle=0.3)
    tui.send_keys("Enter")
    tui.wait_pane(r"Ask Codex to do anything", settle=0.5)
    assert "Where should the new conversation run?" not in tui.pane()
    assert len(tui.rollouts()) == 1, "the new thread's rollout waits for its first prompt"
    codex_model.script.add(when("CLEAR-2", text("reply CLEAR-2")))
    tui.prompt("after CLEAR-2")
    rollouts = tui.wait_rollouts(2)
    new = next(p for p in rollouts if p != old)
    starts = codex_home.spool.wait("SessionStart", 2)
    assert [s["payload"]["source"] for s in starts] == ["startup", "clear"]
    assert starts[1]["payload"]["transcript_path"] == str(new)
    assert starts[0]["payload"]["session_id"] != starts[1]["payload"]["session_id"]
    lines = tui.wait_for(new, lambda ls: events(ls, "task_complete") and ls)
    assert message_texts(lines, "assistant") == ["reply CLEAR-2"]
    assert "hello CLEAR-1" not in message_texts(lines, "user"), "the new thread starts empty"
    assert old.read_bytes() == old_bytes, "the old rollout is left as it was"


def test_new_asks_where_to_run_in_a_git_worktree(codex_tui, codex_model):
    tui = codex_tui()
    old = first_turn(tui, codex_model, "NEW-1")
    tui.send_literal("/new")
    tui.wait_pane(r"/new\s+start a new chat during a conversation", settle=0.3)
    tui.send_keys("Enter")
    tui.wait_pane(
        r"Where should the new conversation run\?[\s\S]*1\. Use current Git worktree[\s\S]*"
        r"2\. Create new Git worktree",
        settle=0.5,
    )
    tui.send_keys("Escape")
    tui.wait_pane(r"\? for shortcuts", settle=0.3)
    # Escape closed the question and started nothing: a new thread writes no rollout before its
    # first prompt, so only the next prompt tells. It goes on in the old thread.
    codex_model.script.add(when("STAYED", text("reply STAYED")))
    tui.prompt("after STAYED")
    lines = tui.wait_for(old, lambda ls: "reply STAYED" in message_texts(ls, "assistant") and ls, timeout=30)
    assert "hello NEW-1" in message_texts(lines, "user")
    assert len(tui.rollouts()) == 1


def test_new_on_the_current_worktree_starts_a_thread_with_source_startup(codex_tui, codex_home, codex_model):
    tui = codex_tui()
    old = first_turn(tui, codex_model, "NEW-2")
    tui.send_literal("/new")
    tui.wait_pane(r"/new\s+start a new chat during a conversation", settle=0.3)
    tui.send_keys("Enter")
    tui.wait_pane(r"› 1\. Use current Git worktree", settle=0.5)
    tui.send_keys("Enter")
    tui.wait_pane(r"\? for shortcuts", settle=0.5)
    codex_model.script.add(when("NEW-3", text("reply NEW-3")))
    tui.prompt("after NEW-3")
    rollouts = tui.wait_rollouts(2)
    new = next(p for p in rollouts if p != old)
    starts = codex_home.spool.wait("SessionStart", 2)
    assert [s["payload"]["source"] for s in starts] == ["startup", "startup"]
    assert starts[1]["payload"]["transcript_path"] == str(new)
    assert starts[1]["payload"]["cwd"] == str(codex_home.worktree)
