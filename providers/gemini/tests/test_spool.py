"""The fold of Gemini's hook payloads: an approval from BeforeTool + Notification, closed by
AfterTool or by the session's cancel; questions and plans hold the run; /clear's marker."""

from __future__ import annotations

from providers.gemini.spool import SpoolView, fold, marker_line, marker_session
from providers.schema import DialogKind


def ev(ns: int, name: str, **payload: object) -> dict[str, object]:
    return {"_spool_name": f"{ns:020d}-1.json", "hook_event_name": name, **payload}


SHELL = {"command": "echo x > f.txt", "description": "write"}
ASK = ev(
    2,
    "Notification",
    notification_type="ToolPermission",
    details={"type": "exec", "command": "echo x > f.txt"},
)


def test_a_confirmation_is_an_approval_with_the_command_and_the_two_rows_lab_can_play() -> None:
    view = fold([ev(1, "BeforeTool", tool_name="run_shell_command", tool_input=SHELL), ASK])
    dialog = view.dialog
    assert dialog is not None and dialog.kind == DialogKind.APPROVAL
    assert dialog.tool_use_id == "tool-1" and dialog.body == "echo x > f.txt"
    assert [(o.label, o.preferred, o.denies) for o in dialog.options] == [
        ("Allow once", True, False),
        ("No, suggest changes", False, True),
    ]


def test_after_tool_closes_it_and_so_does_the_sessions_cancel() -> None:
    before = ev(1, "BeforeTool", tool_name="run_shell_command", tool_input=SHELL)
    assert fold([before, ASK, ev(3, "AfterTool", tool_name="run_shell_command")]).dialog is None
    assert fold([before, ASK], resolved=frozenset({"tool-1"})).dialog is None


def test_a_tool_that_has_not_asked_yet_is_unsettled_and_a_turn_end_closes_everything() -> None:
    before = ev(1, "BeforeTool", tool_name="run_shell_command", tool_input=SHELL)
    assert fold([before]).unsettled_tool_ns == 1
    assert fold([before, ASK, ev(3, "AfterAgent")]) == SpoolView()


def test_a_confirmation_lab_has_no_rows_for_blocks_instead_of_offering_rows() -> None:
    before = ev(1, "BeforeTool", tool_name="some_tool", tool_input={})
    odd = ev(2, "Notification", notification_type="ToolPermission", details={"type": "unknown"})
    view = fold([before, odd])
    assert view.dialog is None and view.blocked


def test_a_question_holds_the_run_until_it_ends_or_is_cancelled() -> None:
    before = ev(1, "BeforeTool", tool_name="ask_user", tool_input={"questions": []})
    note = ev(2, "Notification", notification_type="ToolPermission", details={"type": "ask_user"})
    view = fold([before, note])
    assert view.blocked and view.dialog is None and view.in_dialog == "tool-1"
    assert not fold([before, note, ev(3, "AfterTool", tool_name="ask_user")]).blocked
    assert not fold([before, note], resolved=frozenset({"tool-1"})).blocked


def test_a_clear_marker_names_its_session() -> None:
    line = marker_line("/clear", "/h/.gemini/tmp/wt/chats/session-x.jsonl", "2026-01-01T00:00:00.000Z")
    assert marker_session(line + b"\n") == "/h/.gemini/tmp/wt/chats/session-x.jsonl"
    assert marker_session(b"not json") == ""


def test_the_sweep_keeps_session_starts_recent_payloads_and_what_a_pending_dialog_rests_on(tmp_path) -> None:
    import time

    import orjson

    from providers.gemini.provider import GeminiProvider
    from providers.schema import RunHandle

    spool = tmp_path / "spool"
    spool.mkdir()
    now = time.time_ns()
    old = now - 700 * 1_000_000_000

    def put(ns: int, payload: dict[str, object]) -> str:
        name = f"{ns:020d}-1.json"
        (spool / name).write_bytes(orjson.dumps(payload))
        return name

    start = put(old, {"hook_event_name": "SessionStart", "transcript_path": "x"})
    stale = put(old + 1, {"hook_event_name": "BeforeAgent"})
    fresh = put(now - 1_000_000_000, {"hook_event_name": "AfterAgent"})
    run = RunHandle(run_id=1, worktree=str(tmp_path), tmux_socket="s", tmux_session="t", spool_dir=str(spool))
    provider = GeminiProvider()
    assert list(provider.sweepable(run, fold([]), now)) == [stale]
    asking = fold([ev(1, "BeforeTool", tool_name="run_shell_command", tool_input=SHELL), ASK])
    assert list(provider.sweepable(run, asking, now)) == [], "a pending approval rests on its payloads"
    assert start and fresh
