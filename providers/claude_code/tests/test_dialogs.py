"""An Edit approval's diff is numbered as in the file, or says the numbers are not known."""

from __future__ import annotations

import os
from pathlib import Path

from providers.claude_code.dialogs import NO_LINE_NUMBERS, PLAN_APPROVE_MANUAL, PLAN_OPTIONS, approval_dialog


def edit_body(path: Path | str, old: str, new: str) -> str:
    tool_input = {"file_path": str(path), "old_string": old, "new_string": new}
    return approval_dialog("toolu_edit", "Edit", tool_input, []).body


def test_a_change_on_line_2_is_numbered_line_2(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("first\nsecond\nthird\n")
    body = edit_body(target, "second", "SECOND")
    assert body.splitlines()[2:] == ["@@ -2 +2 @@", "-second", "+SECOND"]


def test_a_longer_edit_keeps_its_counts_and_moves_its_start(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text("".join(f"line {i}\n" for i in range(1, 41)))
    body = edit_body(target, "line 30\nline 31", "line 30\nnew\nline 31")
    assert "@@ -30,2 +30,3 @@" in body.splitlines()


def test_line_numbers_that_cannot_be_known_are_not_made_up(tmp_path: Path) -> None:
    twice = tmp_path / "twice.txt"
    twice.write_text("x\ny\nx\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, old in [(tmp_path / "missing.txt", "x"), (twice, "x"), (fifo, "x"), ("relative.txt", "x")]:
        lines = edit_body(path, old, "z").splitlines()
        assert NO_LINE_NUMBERS in lines and not any(line.startswith("@@ -1") for line in lines), path


def test_the_plans_preferred_option_is_approving_with_a_question_before_each_action() -> None:
    # The page shows the preferred option first and as its primary button: never auto mode.
    assert [o.label for o in PLAN_OPTIONS if o.preferred] == [PLAN_APPROVE_MANUAL]
