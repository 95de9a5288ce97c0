"""compat.check for claude-code, without npm or a CLI: the COMPAT sections it reads and the table it prints."""
# ruff: noqa: E501  (junit lines and test names are long)

from __future__ import annotations

from pathlib import Path

from compat.check import Outcome, outcomes, sections, table
from compat.claude_code.check import TARGET

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="compat.claude_code.tests.test_live_login" name="test_auth_status_is_json_with_rc_1_when_logged_out" />
<testcase classname="compat.claude_code.tests.test_live_login" name="test_the_code_paste_url_is_captured_and_shown">
  <failure message="AssertionError: drift: the printed sign-in link has a shape lab has not seen: https://x&#10;assert None">tb</failure>
</testcase>
<testcase classname="compat.claude_code.tests.test_live_commands" name="test_the_menu_equals_the_pinned_tables_and_the_worktree_commands">
  <failure message="Failed: drift in the pinned catalog (compat §10): builtin: /clear description: pinned 'a', the CLI shows 'b'">tb</failure>
</testcase>
<testcase classname="compat.claude_code.tests.test_live_adapter" name="test_interrupt_of_a_slow_stream_goes_idle_with_a_lifecycle_line">
  <failure message="TimeoutError: no interruption line within 30 s">tb</failure>
</testcase>
<testcase classname="tests.reliability.test_scale_out" name="test_two_workers[redis]" />
</testsuite></testsuites>
"""


def test_every_live_test_is_placed_and_each_failure_named_with_its_reason(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    results = outcomes(junit)
    assert [o.status for o in results] == ["pass", "drift", "drift", "fail", "pass"]
    text = table(TARGET, "9.9.9", "2026-12-01T00:00:00Z", results, sections(TARGET.compat_dir), 42)
    assert "Claude Code 9.9.9 (released 2026-12-01" in text
    assert "2 passed, 1 failed, 2 drift, 0 skipped" in text
    rows = {line.split("  ")[0]: line for line in text.splitlines() if line and not line.startswith(" ")}
    assert "drift (1/2 passed)" in rows["login (whole file)"]
    assert "drift (0/1 passed)" in rows["commands (whole file)"]
    assert "FAIL (0/1 passed)" in rows["§9 Interrupt hazards"]
    assert "no live test ran" in rows["§5 Clear / epoch"]
    # A test no COMPAT text names still gets a row: nothing is dropped from the table.
    assert "pass (1/1 passed)" in rows["(no COMPAT section names these)"]
    assert (
        "fail: test_interrupt_of_a_slow_stream_goes_idle_with_a_lifecycle_line: "
        "TimeoutError: no interruption line within 30 s" in text
    )
    assert (
        "drift: test_the_menu_equals_the_pinned_tables_and_the_worktree_commands: drift in the pinned "
        in text
    )


def test_a_section_places_named_prefixed_and_whole_file_tests() -> None:
    by_label = {s.label: s for s in sections(TARGET.compat_dir)}
    interrupt = by_label["§9 Interrupt hazards"]
    assert interrupt.names(
        Outcome(
            "compat/claude_code/tests/test_live_adapter.py::test_interrupt_of_a_slow_stream_goes_idle_with_a_lifecycle_line",
            "pass",
        )
    )
    clear = by_label["§5 Clear / epoch"]  # named as a prefix: `test_clear_gives_…`
    assert clear.names(
        Outcome("compat/claude_code/tests/test_live_adapter.py::test_clear_gives_a_new_one[x]", "pass")
    )
    assert by_label["login (whole file)"].names(
        Outcome("compat/claude_code/tests/test_live_login.py::test_anything", "pass")
    )
    assert not interrupt.names(Outcome("compat/claude_code/tests/test_live_login.py::test_anything", "pass"))
