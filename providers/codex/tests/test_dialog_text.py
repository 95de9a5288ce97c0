"""Codex's decline takes the operator's text but goes without it too (compat §7): the page must
not hold the button back for the text (Option.needs_text stays False)."""

from __future__ import annotations

from providers.codex.dialogs import DENY, approval_dialog, choice_for
from providers.schema import Answer


def test_the_decline_goes_with_or_without_text() -> None:
    dialog = approval_dialog("call_1", "Bash", {"command": "ls"})
    index, option = next((i, o) for i, o in enumerate(dialog.options) if o.takes_text)
    assert not option.needs_text
    assert choice_for(dialog, [Answer(choices=(index,), text="")]).key == DENY
