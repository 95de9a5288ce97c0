"""An option that takes text says whether it needs it (Option.needs_text): the page asks for
the text before sending exactly when the recipe would refuse the answer without it."""

from __future__ import annotations

from providers.claude_code.dialogs import PLAN_OPTIONS, approval_dialog
from providers.claude_code.recipes import recipe_for
from providers.errors import DialogNotAnswerable
from providers.schema import Answer, Dialog, DialogKind

DIALOGS = (
    Dialog(tool_use_id="toolu_p", kind=DialogKind.PLAN, options=PLAN_OPTIONS, body="# Plan"),
    approval_dialog("toolu_b", "Bash", {"command": "ls"}, None),
    approval_dialog("toolu_w", "Write", {"file_path": "a.txt", "content": "x"}, None),
)


def test_needs_text_is_set_exactly_where_the_recipe_refuses_an_empty_text() -> None:
    checked = 0
    for dialog in DIALOGS:
        for index, option in enumerate(dialog.options):
            if not option.takes_text:
                assert not option.needs_text
                continue
            try:
                recipe_for(dialog, [Answer(choices=(index,), text="")])
                refused = False
            except DialogNotAnswerable:
                refused = True
            assert option.needs_text == refused, (dialog.kind, option.label)
            checked += 1
    assert checked == 3
