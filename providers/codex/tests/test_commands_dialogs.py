"""The pinned catalog and the approval's answers."""

from __future__ import annotations

import pytest

from providers.codex.commands import command_catalog
from providers.codex.dialogs import ALLOW, ALLOW_PREFIX, DENY, approval_dialog, choice_for
from providers.errors import DialogNotAnswerable
from providers.schema import Answer, CommandRole, Dialog, DialogKind


def test_the_catalog_has_one_chat_safe_clear_row_and_says_why_for_the_rest(tmp_path):
    rows = command_catalog(tmp_path)
    assert len({r.name for r in rows}) == len(rows)
    (clear,) = [r for r in rows if r.role is CommandRole.CLEAR]
    assert clear.name == "clear" and clear.chat_safe
    assert [r.name for r in rows if r.chat_safe] == ["clear"]
    assert all(r.reason for r in rows if not r.chat_safe)
    new = next(r for r in rows if r.name == "new")
    assert not new.chat_safe  # it asks where to run first, in a git worktree


def test_each_option_plays_its_own_key():
    dialog = approval_dialog("call_1", "Bash", {"command": "ls"})
    assert choice_for(dialog, [Answer(choices=(0,))]).key == ALLOW
    assert choice_for(dialog, [Answer(choices=(1,))]).tmux_key == "p"
    deny = choice_for(dialog, [Answer(choices=(2,), text="  do Y instead ")])
    assert (deny.key, deny.tmux_key, deny.text) == (DENY, "Escape", "do Y instead")
    assert choice_for(dialog, []).key == DENY  # an empty answer declines
    assert choice_for(dialog, [Answer(choices=(1,), text="ignored")]).text == ""
    assert choice_for(dialog, [Answer(choices=(1,))]).key == ALLOW_PREFIX


@pytest.mark.parametrize("answers", [[Answer(choices=(3,))], [Answer(choices=(0, 1))], [Answer(), Answer()]])
def test_an_answer_that_does_not_fit_is_refused_before_any_key(answers):
    with pytest.raises(DialogNotAnswerable):
        choice_for(approval_dialog("call_1", "Bash", {"command": "ls"}), answers)


def test_only_approvals_are_answerable():
    with pytest.raises(DialogNotAnswerable):
        choice_for(Dialog(tool_use_id="x", kind=DialogKind.QUESTION), [Answer(choices=(0,))])
