"""Live: lab's Claude Code adapter against the real 2.1.328 TUI and the scripted model.

Every test goes through the production path (spawn, reply, interrupt, locate_transcript,
read_transcript), waits on transcript lines with generous deadlines, never on fixed sleeps.
COMPAT §1-§6 name these tests.
"""

from __future__ import annotations

import threading

import pytest

from compat.claude_code.scripted_model import slow_text, text, when
from providers.errors import SessionGone
from providers.outbox import reply_turn_taken
from providers.schema import MessageKind, RunState
from providers.tmux import Tmux

pytestmark = pytest.mark.live


def _idle_after(run, text_):
    return text_ in run.texts(MessageKind.ASSISTANT_TEXT) and run.last.state == RunState.IDLE


def test_a_prompt_gets_the_scripted_reply_and_the_run_goes_idle(scripted_model, live_run):
    scripted_model.script.add(text("Hello from the scripted model."))
    live_run.provider.reply(live_run.handle, "hello world")
    live_run.wait(lambda r: _idle_after(r, "Hello from the scripted model."), what="the reply, then idle")
    assert live_run.texts(MessageKind.USER_TEXT) == ["hello world"]
    assert [m.seq for m in live_run.messages] == list(range(len(live_run.messages)))


def test_a_seven_line_600_char_reply_is_submitted_not_left_in_the_composer(scripted_model, live_run):
    scripted_model.script.add(text("Got the long one."))
    lines = [f"Line {i}: " + "lorem ipsum dolor sit amet " * 3 for i in range(1, 8)]
    long_reply = "\n".join(lines)[:600]
    assert len(long_reply) >= 590 and long_reply.count("\n") == 6
    live_run.provider.reply(live_run.handle, long_reply)  # raises ReplyNotDelivered otherwise
    live_run.wait(lambda r: _idle_after(r, "Got the long one."), what="the reply to the paste")
    (user,) = live_run.texts(MessageKind.USER_TEXT)
    assert user.split() == long_reply.split()  # the <pasted_content> wrapper is stripped
    request = scripted_model.wait_for_request(lambda e: "Line 7:" in str(e.get("body")), timeout=10)
    assert request


def test_a_reply_while_working_is_queued_and_lands(scripted_model, live_run):
    scripted_model.script.add(when("SLOW", slow_text(8, 0.7)), when("FOLLOW", text("Follow-up handled.")))
    live_run.provider.reply(live_run.handle, "SLOW please")
    scripted_model.wait_streaming(min_deltas=2, timeout=60)
    live_run.refresh()
    assert live_run.last.state == RunState.WORKING
    live_run.provider.reply(live_run.handle, "FOLLOW up while you work")  # the enqueue is the receipt
    live_run.wait(
        lambda r: _idle_after(r, "Follow-up handled."), timeout=90, what="the queued prompt's answer"
    )
    assert "FOLLOW up while you work" in live_run.texts(MessageKind.USER_TEXT)


def test_clear_gives_a_new_transcript_identity_seq_restarts_and_idle(scripted_model, live_run):
    scripted_model.script.add(text("Before the clear."))
    live_run.provider.reply(live_run.handle, "first conversation")
    live_run.wait(lambda r: _idle_after(r, "Before the clear."), what="the first turn")
    first_path = live_run.path
    live_run.provider.reply(live_run.handle, "/clear")
    live_run.wait(lambda r: r.path != first_path and r.messages, what="the new transcript after /clear")
    assert live_run.messages[0].seq == 0
    assert live_run.messages[0].kind == MessageKind.USER_TEXT and live_run.messages[0].text == "/clear"
    assert live_run.last.state == RunState.IDLE  # a lone command echo is idle, never working
    scripted_model.script.add(text("After the clear."))
    live_run.provider.reply(live_run.handle, "second conversation")
    live_run.wait(lambda r: _idle_after(r, "After the clear."), what="a turn in the new conversation")
    assert "first conversation" not in live_run.texts(MessageKind.USER_TEXT)


def test_a_reply_right_after_new_conversation_waits_its_turn_and_lands_in_it(scripted_model, live_run):
    """New conversation, then a message at once: the /clear still holds the run's reply turn
    (it waits for the new transcript), so the message waits behind it and goes into the new
    conversation, never a 409 offering "a second copy" of a message nothing else was sending."""
    scripted_model.script.add(when("OLD", text("Old one.")), when("NEW", text("New one.")))
    live_run.provider.reply(live_run.handle, "OLD first")
    live_run.wait(lambda r: _idle_after(r, "Old one."), what="the first turn")
    first_path = live_run.path
    cleared: list[BaseException | None] = []

    def clear() -> None:
        try:
            live_run.provider.reply(live_run.handle, "/clear")
            cleared.append(None)
        except BaseException as exc:  # reported by the assert below
            cleared.append(exc)

    clearing = threading.Thread(target=clear)
    clearing.start()
    live_run.wait(lambda r: reply_turn_taken(r.handle), timeout=10, what="the clear taking the reply turn")
    live_run.provider.reply(live_run.handle, "NEW right after")
    clearing.join(60)
    assert cleared == [None]
    live_run.wait(lambda r: _idle_after(r, "New one."), what="the reply's turn")
    assert live_run.path != first_path
    assert live_run.texts(MessageKind.USER_TEXT) == ["/clear", "NEW right after"], "in the new conversation"


def test_interrupt_of_a_slow_stream_goes_idle_with_a_lifecycle_line(scripted_model, live_run):
    scripted_model.script.add(when("SLOW", slow_text(20, 1.0)))
    live_run.provider.reply(live_run.handle, "SLOW stream please")
    scripted_model.wait_streaming(min_deltas=2, timeout=60)
    live_run.wait(lambda r: r.last.state == RunState.WORKING, what="working")
    live_run.provider.interrupt(live_run.handle)
    live_run.wait(
        lambda r: (
            r.last.state == RunState.IDLE
            and any("interrupted" in t.lower() for t in r.texts(MessageKind.LIFECYCLE))
        ),
        what="idle with the interruption rendered",
    )
    assert Tmux(live_run.handle.tmux_socket).has_session(live_run.handle.tmux_session), (
        "one Esc must not quit"
    )


def test_a_killed_session_is_gone_and_a_reply_says_so(scripted_model, live_run):
    tmux = Tmux(live_run.handle.tmux_socket)
    tmux.kill_session(live_run.handle.tmux_session)
    assert not tmux.has_session(live_run.handle.tmux_session)
    with pytest.raises(SessionGone):
        live_run.provider.reply(live_run.handle, "anyone there?")
