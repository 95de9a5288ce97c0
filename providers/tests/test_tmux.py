"""lab's tmux wrapper against a real tmux server."""

from __future__ import annotations

import subprocess
import uuid

from providers.tmux import Tmux


def test_a_new_session_keeps_the_size_lab_chose_when_a_bigger_client_attaches(tmp_path) -> None:
    socket = f"labtest-{uuid.uuid4().hex[:8]}"
    tmux = Tmux(socket)
    try:
        tmux.new_session(
            "sized",
            cwd=str(tmp_path),
            argv=["sleep", "60"],
            env={"PATH": "/usr/bin:/bin"},
            width=90,
            height=30,
        )
        # A client of another size (an operator's `tmux attach`, a control client) joins.
        attach = subprocess.Popen(
            ["tmux", "-L", socket, "-C", "attach-session", "-t", "=sized"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert attach.stdin is not None and attach.stdout is not None
        attach.stdin.write(b"refresh-client -C 150x60\n")
        attach.stdin.flush()
        answered = 0  # the attach's own block, then the refresh's: the size has been applied
        while answered < 2:
            answered += attach.stdout.readline().startswith((b"%end", b"%error"))
        sized = subprocess.run(
            ["tmux", "-L", socket, "display-message", "-p", "-t", "=sized:", "#{pane_width}x#{pane_height}"],
            capture_output=True,
            check=True,
        )
        attach.stdin.close()
        attach.wait(5)
        assert sized.stdout.decode().strip() == "90x30"
    finally:
        tmux.kill_server()
