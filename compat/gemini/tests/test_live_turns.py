"""Live: the real Gemini CLI through lab's production adapter: spawn, replies with their
receipts, tool turns and states (compat/gemini/COMPAT.md §1-§5)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from compat.gemini.scripted_model import api_error, shell, slow_text, text, when
from providers.errors import SpawnFailed
from providers.hookspool import spool_events
from providers.schema import MessageKind, RunState
from providers.tmux import Tmux

pytestmark = pytest.mark.live


def _processes(marker: str, name: bytes = b"") -> list[int]:
    """Live processes whose environment holds `marker` (the run's private home), and whose
    command line holds `name`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if marker.encode() in environ and name in cmdline:
            found.append(int(entry))
    return found


def test_spawn_binds_the_run_to_the_hooks_session_file_and_end_leaves_no_process(gemini_rig):
    run = gemini_rig.start()
    gemini_rig.model.script.add(text("Hello from the scripted model."))
    run.provider.reply(run.handle, "say hello")
    run.wait(lambda r: r.answered("Hello from the scripted model."), what="the reply")
    [start] = [e for e in spool_events(run.handle.spool_dir) if e.get("hook_event_name") == "SessionStart"]
    assert start["source"] == "startup"
    assert run.path == start["transcript_path"]
    assert Path(run.path).parent.name == "chats" and Path(run.path).is_relative_to(
        gemini_rig.home / ".gemini" / "tmp"
    )

    marker = f"GEMINI_CLI_HOME={gemini_rig.home}"
    assert len(_processes(marker, b"bin/gemini")) == 1, "one process: the CLI does not re-exec a child"
    # End, as lab ends a run: the session killed, and nothing of the agent's left running.
    Tmux(run.handle.tmux_socket).kill_session(run.handle.tmux_session)
    deadline = time.monotonic() + 10
    while _processes(marker):
        assert time.monotonic() < deadline, "a Gemini process outlived its tmux session"
        time.sleep(0.1)


def test_a_tool_turn_reads_working_then_idle_with_the_call_and_its_output(gemini_rig):
    gemini_rig.model.script.add(when("TOKEN-TOOL", shell("echo live-tool", "print"), slow_text(6, 0.5)))
    run = gemini_rig.start()
    run.provider.reply(run.handle, "TOKEN-TOOL please")
    run.wait(lambda r: r.state == RunState.WORKING, what="working")
    run.wait(
        lambda r: r.state == RunState.IDLE and r.texts(MessageKind.ASSISTANT_TEXT), what="the end of the turn"
    )
    kinds = [m.kind for m in run.messages]
    assert kinds == [
        MessageKind.USER_TEXT,
        MessageKind.TOOL_USE,
        MessageKind.TOOL_RESULT,
        MessageKind.ASSISTANT_TEXT,
    ]
    assert run.messages[1].tool_input == "echo live-tool"
    assert "live-tool" in run.messages[2].text


def test_an_api_error_the_cli_gives_up_on_is_an_error_line_and_idle(gemini_rig):
    gemini_rig.model.script.add(when("TOKEN-FAIL", api_error(400, "scripted bad request")))
    run = gemini_rig.start()
    run.provider.reply(run.handle, "TOKEN-FAIL please")
    run.wait(lambda r: any(m.is_error for m in r.messages) and r.state == RunState.IDLE, what="the error")
    assert any("scripted bad request" in m.text for m in run.messages if m.is_error), run.messages


def test_an_untrusted_repository_with_gemini_settings_does_not_start(gemini_rig):
    (gemini_rig.worktree / ".gemini").mkdir()
    (gemini_rig.worktree / ".gemini" / "settings.json").write_text('{"hooks": {}}')
    with pytest.raises(SpawnFailed, match=r"\.gemini/settings\.json.*not trusted"):
        gemini_rig.start()
