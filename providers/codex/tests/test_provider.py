"""The Codex process lab reads: whatever launched it, the TUI's open files are found."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from providers.codex.provider import _thread_locks


def test_a_thread_lock_held_by_the_launchers_child_is_found(tmp_path):
    # The pane's process is the launcher (node_modules/.bin's node shim); the binary that opens
    # the lock is its child, as on an npm install.
    lock = tmp_path / "thread-writer-locks" / "t1.lock"
    lock.parent.mkdir()
    child = f"import time; f = open({str(lock)!r}, 'w'); time.sleep(30)"
    launcher = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while not lock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)
        assert _thread_locks(launcher.pid) == {str(lock)}
    finally:
        os.killpg(launcher.pid, signal.SIGKILL)  # the launcher and its child: their own group
        launcher.wait()


def test_the_ready_marker_never_writes_through_a_link_the_agent_planted(tmp_path):
    from providers.codex.provider import _ready_marker
    from providers.schema import RunHandle

    spool = tmp_path / "spool"
    spool.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("mine")
    (spool / ".ready").symlink_to(victim)
    run = RunHandle(run_id=1, worktree=str(tmp_path), tmux_socket="s", tmux_session="x", spool_dir=str(spool))
    _ready_marker(run, mark=True)
    assert victim.read_text() == "mine" and not (spool / ".ready").is_symlink()
