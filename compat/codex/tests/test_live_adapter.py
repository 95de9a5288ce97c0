"""Codex 0.171.0 through lab's production adapter, live and offline (compat/codex/COMPAT-adapter.md).

Each test drives the real TUI in tmux against the scripted Responses API model, through
`providers.codex.CodexProvider` exactly as lab's run services call it. Every prompt carries a
unique token: the model's rules match by substring.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from compat.codex.adapter_harness import CodexAdapterRig, Reading
from compat.codex.scripted_model import api_error, exec_command, slow_text, text, when
from providers.codex.transcript import DECLINED_TEXT
from providers.errors import PromptPending
from providers.outbox import reply_turn_taken
from providers.schema import Answer, Cursor, DialogKind, MessageKind, RunState
from providers.tmux import Tmux

pytestmark = pytest.mark.live


@pytest.fixture
def rig(tmp_path, settings):
    r = CodexAdapterRig(tmp_path, settings)
    yield r
    r.close()


def _processes_with(needle: str) -> list[int]:
    """Pids whose environment holds `needle` (the run's unique key): the agent and its children."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if needle.encode() in environ:
            found.append(int(pid))
    return found


def _wait_pending(run: Reading, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dialog = run.provider.pending_dialog(run.handle)
        if dialog is not None:
            return dialog
        time.sleep(0.05)
    raise AssertionError("no approval became pending")


def test_a_reply_is_delivered_and_answered(rig):
    rig.model.script.add(when("TOKEN-REPLY", text("Reply answered.")))
    run = rig.start()
    run.provider.reply(run.handle, "TOKEN-REPLY first line\nsecond line")
    run.wait(lambda r: r.answered("Reply answered."), what="the reply answered")
    assert run.texts(MessageKind.USER_TEXT) == ["TOKEN-REPLY first line\nsecond line"]
    # The rollout's SessionStart named a real rollout under CODEX_HOME/sessions.
    assert run.path.startswith(str(rig.codex_home / "sessions"))


def test_a_reply_while_working_is_taken(rig):
    rig.model.script.add(when("TOKEN-SLOW", slow_text(30, 0.3)), when("TOKEN-STEER", text("Steer answered.")))
    run = rig.start()
    run.provider.reply(run.handle, "TOKEN-SLOW go")
    rig.model.wait_streaming(min_deltas=2)
    run.wait(lambda r: r.state == RunState.WORKING, what="working")
    run.provider.reply(run.handle, "TOKEN-STEER now")
    run.wait(lambda r: r.answered("Steer answered."), what="the steer answered")
    assert "TOKEN-STEER now" in run.texts(MessageKind.USER_TEXT)


def test_interrupt_returns_to_idle_and_is_harmless_at_idle(rig):
    rig.model.script.add(when("TOKEN-LONG", slow_text(60, 0.5)), when("TOKEN-AFTER", text("Still here.")))
    run = rig.start()
    run.provider.reply(run.handle, "TOKEN-LONG go")
    rig.model.wait_streaming(min_deltas=2)
    run.wait(lambda r: r.state == RunState.WORKING, what="working")
    run.provider.interrupt(run.handle)
    run.wait(lambda r: r.state == RunState.IDLE, what="idle after the interrupt")
    assert any(m.kind == MessageKind.LIFECYCLE and "interrupted" in m.text for m in run.messages)
    # At idle, twice: nothing may open. A first Esc at idle arms "esc again to edit previous
    # message", a second opens the transcript browser, where Enter rewinds the conversation.
    # (The test watches its own pane for that; the adapter never reads it.)
    run.provider.interrupt(run.handle)
    run.provider.interrupt(run.handle)
    tmux = Tmux(run.handle.tmux_socket)
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        pane = tmux.capture(run.handle.tmux_session)
        assert "Browsing transcript" not in pane and "edit previous message" not in pane
        time.sleep(0.05)
    run.provider.reply(run.handle, "TOKEN-AFTER ping")
    run.wait(lambda r: r.answered("Still here."), what="a normal turn after the interrupts")


def test_clear_gives_a_new_identity_and_seq_restarts(rig):
    rig.model.script.add(when("TOKEN-C1", text("Before.")), when("TOKEN-C2", text("After.")))
    run = rig.start()
    run.provider.reply(run.handle, "TOKEN-C1 first")
    run.wait(lambda r: r.answered("Before."), what="the first turn")
    first = run.path
    run.provider.reply(run.handle, "/clear")
    run.wait(lambda r: r.path != first and bool(r.messages), what="a new identity")
    fresh = run.provider.read_transcript(run.path, Cursor())
    assert [m.seq for m in fresh.messages][:1] == [0]
    assert fresh.messages[0].kind == MessageKind.USER_TEXT and fresh.messages[0].text == "/clear"
    assert fresh.state == RunState.IDLE
    marker = run.path
    run.provider.reply(run.handle, "TOKEN-C2 second")
    run.wait(lambda r: r.answered("After."), what="a turn in the new conversation")
    assert run.path not in (first, marker) and run.path.startswith(str(rig.codex_home / "sessions"))
    assert "TOKEN-C1 first" not in run.texts(MessageKind.USER_TEXT)


def test_a_reply_right_after_new_conversation_waits_its_turn_and_lands_in_it(rig):
    """The operator clicks New conversation and sends a message at once: nothing else is in
    flight, so the message goes (after the clear, into the new conversation), not a refusal
    offering a second copy."""
    rig.model.script.add(when("TOKEN-Q1", text("Old one.")), when("TOKEN-Q2", text("New one.")))
    run = rig.start()
    run.provider.reply(run.handle, "TOKEN-Q1 first")
    run.wait(lambda r: r.answered("Old one."), what="the first turn")
    first = run.path
    cleared: list[BaseException | None] = []

    def clear() -> None:
        try:
            run.provider.reply(run.handle, "/clear")
            cleared.append(None)
        except BaseException as exc:  # reported by the assert below
            cleared.append(exc)

    clearing = threading.Thread(target=clear)
    clearing.start()
    run.wait(lambda r: reply_turn_taken(r.handle), timeout=10, what="the clear taking the reply turn")
    run.provider.reply(run.handle, "TOKEN-Q2 right after")
    clearing.join(30)
    assert cleared == [None]
    run.wait(lambda r: r.answered("New one."), what="the reply's turn")
    assert run.path != first
    assert run.texts(MessageKind.USER_TEXT) == ["TOKEN-Q2 right after"], "in the new conversation"


def test_an_approval_is_answered_from_lab(rig):
    target = rig.tmp_path / "approved.txt"
    rig.model.script.add(
        when("TOKEN-ALLOW", exec_command(f"touch {target}", escalated=True), text("Approved and done."))
    )
    run = rig.start()
    run.provider.reply(run.handle, "TOKEN-ALLOW please")
    dialog = _wait_pending(run)
    assert dialog.kind == DialogKind.APPROVAL and str(target) in dialog.body
    with pytest.raises(PromptPending):
        run.provider.reply(run.handle, "TOKEN-NOT-NOW")
    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(0,))])
    run.wait(lambda r: r.answered("Approved and done."), what="the approved command's turn")
    assert target.exists()
    assert run.provider.pending_dialog(run.handle) is None
    results = [m for m in run.messages if m.kind == MessageKind.TOOL_RESULT]
    assert results and results[-1].native_id == dialog.tool_use_id and not results[-1].is_error


def test_an_approval_is_declined_from_lab_with_a_message(rig):
    target = rig.tmp_path / "declined.txt"
    rig.model.script.add(
        when("TOKEN-DENY", exec_command(f"touch {target}", escalated=True)),
        when("TOKEN-INSTEAD", text("Doing it differently.")),
    )
    run = rig.start()
    run.provider.reply(run.handle, "TOKEN-DENY please")
    dialog = _wait_pending(run)
    deny = next(i for i, o in enumerate(dialog.options) if o.takes_text)
    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(deny,), text="TOKEN-INSTEAD do X")])
    run.wait(lambda r: r.answered("Doing it differently."), what="the operator's message after the decline")
    assert not target.exists()
    assert run.provider.pending_dialog(run.handle) is None
    result = next(
        m for m in run.messages if m.kind == MessageKind.TOOL_RESULT and m.native_id == dialog.tool_use_id
    )
    assert result.is_error and result.text == DECLINED_TEXT, "shown as declined, not as a failure's wall time"
    assert not [m for m in run.messages if m.native_id.startswith("backstop-")]


def test_a_turn_codex_gives_up_on_shows_its_error(tmp_path, settings):
    """The model answers 429, then 500, until Codex stops retrying (capped at one retry, so it
    gives up in about a second): each turn shows one error line with the cause, and the run is
    idle again."""
    rig = CodexAdapterRig(tmp_path, settings, max_retries=1)
    try:
        rig.model.script.add(
            when("TOKEN-429", api_error(429, "scripted rate limit")),
            when("TOKEN-500", api_error(500, "scripted server error")),
        )
        run = rig.start()
        run.provider.reply(run.handle, "TOKEN-429 go")
        run.wait(lambda r: _errors(r) and r.state == RunState.IDLE, what="the 429 turn's end")
        run.provider.reply(run.handle, "TOKEN-500 go")
        run.wait(lambda r: len(_errors(r)) == 2 and r.state == RunState.IDLE, what="the 500 turn's end")
        assert _errors(run) == [
            "The turn failed after Codex's retries (last HTTP status 429): exceeded retry limit, "
            "last status: 429 Too Many Requests",
            "The turn failed (internal server error): We’re currently experiencing high demand, "
            "which may cause temporary errors.",
        ]
    finally:
        rig.close()


def _errors(run: Reading) -> list[str]:
    return [m.text for m in run.messages if m.kind == MessageKind.LIFECYCLE and m.is_error]


def test_no_codex_process_is_left_after_the_run_ends(rig):
    rig.model.script.add(when("TOKEN-END", text("Ending.")))
    run = rig.start()
    run.provider.reply(run.handle, "TOKEN-END bye")
    run.wait(lambda r: r.answered("Ending."), what="a turn")
    assert _processes_with(rig.key), "the agent should be running with the run's key"
    Tmux(run.handle.tmux_socket).kill_session(run.handle.tmux_session)
    deadline = time.monotonic() + 10
    while _processes_with(rig.key) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(rig.key) == []


def test_the_environment_is_on_no_command_line(rig):
    run = rig.start()
    run.provider.reply(run.handle, "TOKEN-ARGV hello")
    run.wait(lambda r: r.state == RunState.IDLE and bool(r.texts(MessageKind.ASSISTANT_TEXT)), what="a turn")
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            assert rig.key.encode() not in cmdline


def test_dont_ask_again_is_played_and_the_same_command_then_runs_unasked(rig):
    first, second = rig.tmp_path / "p-first.txt", rig.tmp_path / "p-second.txt"
    rig.model.script.add(
        when("TOKEN-PREFIX-1", exec_command(f"touch {first}", escalated=True)),
        when("TOKEN-PREFIX-2", exec_command(f"touch {first} {second}", escalated=True)),
    )

    def ran(r: Reading, call_id: str) -> bool:
        results = [m for m in r.messages if m.kind == MessageKind.TOOL_RESULT and m.native_id == call_id]
        return bool(results) and not results[0].is_error and r.state == RunState.IDLE

    run = rig.start()
    run.provider.reply(run.handle, "TOKEN-PREFIX-1 go")
    dialog = _wait_pending(run)
    prefix = next(i for i, o in enumerate(dialog.options) if o.key == "allow-prefix")
    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(prefix,))])
    run.wait(lambda r: ran(r, dialog.tool_use_id), what="the first command approved and run")
    # A command that starts the same way no longer asks: it runs with no approval pending.
    run.provider.reply(run.handle, "TOKEN-PREFIX-2 go")
    run.wait(lambda r: len(r.texts(MessageKind.TOOL_USE)) == 2, what="the second call")
    second_call = [m for m in run.messages if m.kind == MessageKind.TOOL_USE][-1].native_id
    deadline = time.monotonic() + 30
    while not ran(run, second_call):
        assert run.provider.pending_dialog(run.handle) is None, "the second command asked again"
        assert time.monotonic() < deadline, "the second command never ran"
        run.refresh()
        time.sleep(0.05)
    assert first.exists() and second.exists()


def test_a_first_run_screen_keeps_every_key_out(rig, monkeypatch):
    # An operator's own hook lab has not trusted: Codex shows "Hooks need review" right after
    # its composer is drawn. A reply must not land there (Enter would pick "Review hooks").
    from providers.codex import provider as codex_provider
    from providers.errors import StillStarting

    monkeypatch.setattr(codex_provider, "READY_TIMEOUT_S", 6.0)
    untrusted = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    (rig.codex_home / "hooks.json").write_text(json.dumps(untrusted))
    run = rig.start()
    tmux = Tmux(run.handle.tmux_socket)
    with pytest.raises(StillStarting):
        run.provider.reply(run.handle, "TOKEN-SCREEN hello")
    pane = tmux.capture(run.handle.tmux_session)
    assert "Hooks need review" in pane and "TOKEN-SCREEN" not in pane
