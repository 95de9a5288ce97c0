"""The command catalog and the approval's answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from providers.errors import DialogNotAnswerable
from providers.gemini.commands import command_catalog
from providers.gemini.dialogs import KEYS, approval_dialog, choice_for
from providers.schema import Answer, CommandRole


def test_clear_is_the_one_clear_row_and_the_only_chat_safe_one(tmp_path: Path) -> None:
    rows = command_catalog(tmp_path)
    assert [r.name for r in rows if r.role is CommandRole.CLEAR] == ["clear"]
    assert [r.name for r in rows if r.chat_safe] == ["clear"]
    assert next(r for r in rows if r.name == "clear").aliases == ("new",)
    assert all(r.reason for r in rows if not r.chat_safe)


def test_an_answer_is_played_by_the_rows_key_and_a_decline_keeps_its_text() -> None:
    dialog = approval_dialog("tool-1", "run_shell_command", {"type": "exec", "command": "ls"})
    allow = choice_for(dialog, [Answer(choices=(0,))])
    assert (allow.tmux_key, allow.allows) == (KEYS["allow"], True)
    deny = choice_for(dialog, [Answer(choices=(1,), text=" do it differently ")])
    assert (deny.tmux_key, deny.allows, deny.text) == ("Escape", False, "do it differently")
    with pytest.raises(DialogNotAnswerable):
        choice_for(dialog, [Answer(choices=(2,))])
