"""Live: Gemini's question dialog (the ask_user tool) is not answered from lab yet: the run reads
needs_input (the terminal's), a reply is refused with nothing sent, and once the operator
cancels it in the terminal the run is free again (compat/gemini/COMPAT.md §7)."""

from __future__ import annotations

import time

import pytest

from compat.gemini.scripted_model import ask_user, text, when
from providers.errors import PromptPending
from providers.schema import MessageKind, RunState
from providers.tmux import Tmux

pytestmark = pytest.mark.live


def test_a_question_blocks_the_run_until_the_terminal_answers_it(gemini_rig):
    gemini_rig.model.script.add(when("TOKEN-ASK", ask_user(), text("unused")))
    run = gemini_rig.start()
    run.provider.reply(run.handle, "TOKEN-ASK go")
    deadline = time.monotonic() + 30
    while run.provider.blocked_state(run.handle) != RunState.NEEDS_INPUT:
        assert time.monotonic() < deadline, f"the question never blocked the run; pane:\n{run.pane()}"
        time.sleep(0.05)
    assert run.provider.pending_dialog(run.handle) is None, "lab offers no answer it cannot play"
    with pytest.raises(PromptPending):
        run.provider.reply(run.handle, "a message while it asks")
    # The operator answers in the terminal: Esc cancels the question.
    Tmux(run.handle.tmux_socket).send_keys(run.handle.tmux_session, "Escape")
    run.wait(lambda r: "Request cancelled." in r.texts(MessageKind.LIFECYCLE), what="the cancel")
    deadline = time.monotonic() + 15
    while run.provider.blocked_state(run.handle) is not None:
        assert time.monotonic() < deadline, "the cancelled question still blocks the run"
        time.sleep(0.05)
    gemini_rig.model.script.add(text("Free again."))
    run.provider.reply(run.handle, "are you there")
    run.wait(lambda r: r.answered("Free again."), what="a reply after the question")
