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
