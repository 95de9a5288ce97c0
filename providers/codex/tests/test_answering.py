"""An approval's key and an interrupt on the same Codex prompt (compat/codex §7, §11), against a
stand-in terminal: the interrupt never answers the prompt, and the answer reads its approval
again right before its key. The live proofs of the keys themselves are in
compat/codex/tests/test_live_approvals.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from providers import tui
from providers.codex import provider as codex
from providers.errors import PromptPending, StaleDialog
from providers.outbox import mark_interrupt
from providers.schema import Answer, Cursor, RunHandle

PRE = {
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_use_id": "call_1",
    "tool_input": {"command": "rm x"},
}
ASK = {"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": "rm x"}}
POST = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "call_1"}


class Terminal:
    """tmux as the approval prompt leaves it: the cursor hidden while the prompt shows, shown
    again after a key. `on_look` runs at each look at the pane (something happening meanwhile)."""

    keys: list[str] = []
    on_look = staticmethod(lambda: None)

    def __init__(self, socket: str) -> None:
        pass

    def has_session(self, name: str) -> bool:
        return True

    def pane_format(self, name: str, fmt: str) -> str:
        Terminal.on_look()
        return "1" if Terminal.keys else "0"

    def send_keys(self, name: str, *keys: str) -> None:
        Terminal.keys.extend(keys)


def spool(dir: Path, event: dict) -> None:
    (dir / f"{time.time_ns():020d}-1.json").write_text(json.dumps(event))


@pytest.fixture
def asking(tmp_path, monkeypatch):
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text("")
    Terminal.keys, Terminal.on_look = [], staticmethod(lambda: None)
    monkeypatch.setattr(tui, "Tmux", Terminal)
    monkeypatch.setattr(codex, "APPROVAL_SETTLE_S", 0.0)
    provider = codex.CodexProvider()
    monkeypatch.setattr(provider, "locate_transcript", lambda run: str(rollout))
    monkeypatch.setattr(provider, "_wait_answered", lambda *a, **k: True)
    run = RunHandle(
        run_id=1, worktree=str(tmp_path), tmux_socket="s", tmux_session="x", spool_dir=str(spool_dir)
    )
    spool(spool_dir, PRE)
    spool(spool_dir, ASK)
    dialog = provider.pending_dialog(run)
    assert dialog is not None
    return provider, run, dialog, spool_dir


def test_an_interrupt_on_a_pending_approval_is_refused_and_sends_no_key(asking):
    provider, run, dialog, _ = asking
    with pytest.raises(PromptPending, match="allow or deny it above"):
        provider.interrupt(run)
    assert Terminal.keys == []
    provider.answer_dialog(run, dialog, [Answer(choices=(0,))])  # still the operator's to answer
    assert Terminal.keys == ["y"]


def test_an_answer_after_an_interrupt_since_the_tool_began_sends_no_key(asking):
    provider, run, dialog, _ = asking
    mark_interrupt(run)  # an Esc whose check came just before the prompt: it stopped the tool
    with pytest.raises(StaleDialog, match="Nothing was sent"):
        provider.answer_dialog(run, dialog, [Answer(choices=(0,))])
    assert Terminal.keys == [] and provider.intents(provider.locate_transcript(run)) == {}


def test_an_approval_closed_while_the_answer_waited_for_the_prompt_gets_no_key(asking):
    provider, run, dialog, spool_dir = asking
    # Checked when the answer began; gone by the time its key would go.
    Terminal.on_look = staticmethod(lambda: spool(spool_dir, POST))
    with pytest.raises(StaleDialog, match="Nothing was sent"):
        provider.answer_dialog(run, dialog, [Answer(choices=(0,))])
    assert Terminal.keys == []


def test_two_workers_show_the_same_backstop_warning(tmp_path, monkeypatch):
    """The socket's worker answers, the watcher's worker reads the rollout: the answer's intent
    reaches the reader, so the mismatch warns whichever process read the result."""
    import shutil

    from providers.codex.tests.test_backstop import ROLLOUT, calls

    rollout = tmp_path / "rollout.jsonl"
    shutil.copy(ROLLOUT, rollout)
    _, declined = calls(rollout)
    lines = ROLLOUT.read_bytes().splitlines(keepends=True)
    asked = next(i for i, line in enumerate(lines) if declined.encode() in line)
    rollout.write_bytes(b"".join(lines[: asked + 1]))  # the call is asking: no result yet
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    Terminal.keys, Terminal.on_look = [], staticmethod(lambda: None)
    monkeypatch.setattr(tui, "Tmux", Terminal)
    monkeypatch.setattr(codex, "APPROVAL_SETTLE_S", 0.0)
    answering, watching = codex.CodexProvider(), codex.CodexProvider()  # one per worker
    monkeypatch.setattr(answering, "locate_transcript", lambda run: str(rollout))
    monkeypatch.setattr(answering, "_wait_answered", lambda *a, **k: True)
    run = RunHandle(
        run_id=1, worktree=str(tmp_path), tmux_socket="s", tmux_session="x", spool_dir=str(spool_dir)
    )
    spool(spool_dir, {**PRE, "tool_use_id": declined})
    spool(spool_dir, ASK)
    dialog = answering.pending_dialog(run)
    assert dialog is not None and dialog.tool_use_id == declined
    answering.answer_dialog(run, dialog, [Answer(choices=(0,))])  # allowed; Codex records a decline
    with rollout.open("ab") as f:
        f.write(b"".join(lines[asked + 1 :]))

    def warnings(provider: codex.CodexProvider) -> list[str]:
        read = provider.read_transcript(str(rollout), Cursor(path=str(rollout)))
        return [m.text for m in read.messages if m.native_id == f"backstop-{declined}"]

    said = ["lab approved this command, but Codex recorded otherwise"]
    assert warnings(answering) == said
    assert warnings(watching) == said
