"""Live: Gemini's tool confirmation shown as an APPROVAL dialog from its hooks, answered from lab
by label, verified; a decline cancels the turn (compat/gemini/COMPAT.md §6, §7)."""

from __future__ import annotations

import time

import pytest

from compat.gemini.scripted_model import shell, text, when
from providers.errors import PromptPending
from providers.gemini.dialogs import ALLOW, DENY
from providers.schema import Answer, DialogKind, MessageKind, RunState

pytestmark = pytest.mark.live


def _dialog(run, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while (dialog := run.provider.pending_dialog(run.handle)) is None:
        assert time.monotonic() < deadline, f"no approval dialog; pane:\n{run.pane()}"
        time.sleep(0.05)
    return dialog


def _option(dialog, key: str) -> int:
    return next(i for i, o in enumerate(dialog.options) if o.key == key)


def test_an_allowed_command_runs_and_the_turn_goes_on(gemini_rig):
    gemini_rig.model.script.add(
        when("TOKEN-ALLOW", shell("echo allowed > allowed.txt", "write a file"), text("Written."))
    )
    run = gemini_rig.start()
    run.provider.reply(run.handle, "TOKEN-ALLOW go")
    dialog = _dialog(run)
    assert dialog.kind == DialogKind.APPROVAL
    assert dialog.header == "run_shell_command" and dialog.body == "echo allowed > allowed.txt"
    assert [o.label for o in dialog.options] == ["Allow once", "No, suggest changes"]
    with pytest.raises(PromptPending):
        run.provider.reply(run.handle, "a message while it asks")
    with pytest.raises(PromptPending):
        run.provider.interrupt(run.handle)
    assert run.provider.pending_dialog(run.handle) == dialog, "nothing was sent to the prompt"

    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(_option(dialog, ALLOW),))])
    run.wait(lambda r: r.answered("Written."), what="the turn after the approval")
    assert (gemini_rig.worktree / "allowed.txt").read_text() == "allowed\n"
    assert run.provider.pending_dialog(run.handle) is None


def test_a_declined_command_does_not_run_and_the_turn_ends(gemini_rig):
    gemini_rig.model.script.add(
        when("TOKEN-DENY", shell("echo denied > denied.txt", "write a file"), text("unused"))
    )
    run = gemini_rig.start()
    run.provider.reply(run.handle, "TOKEN-DENY go")
    dialog = _dialog(run)
    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(_option(dialog, DENY),))])
    run.wait(
        lambda r: "Request cancelled." in r.texts(MessageKind.LIFECYCLE) and r.state == RunState.IDLE,
        what="the cancelled turn",
    )
    assert not (gemini_rig.worktree / "denied.txt").exists()
    result = next(m for m in run.messages if m.kind == MessageKind.TOOL_RESULT)
    assert result.is_error and "Cancelled" in result.text
    assert run.provider.pending_dialog(run.handle) is None, "the transcript closed the declined prompt"
    # The composer is back: a reply lands.
    gemini_rig.model.script.add(text("Still here."))
    run.provider.reply(run.handle, "are you there")
    run.wait(lambda r: r.answered("Still here."), what="a reply after the decline")
