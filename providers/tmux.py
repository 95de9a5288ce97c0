"""lab's own tmux server, driven with argv lists only.

Every TUI adapter runs its CLI here (docs/architecture.md, principle 1), so this is seam infrastructure,
not Claude Code knowledge. Targets are always exact (`=name`): a run `foo` never touches a
session `foobar`. Nothing here reads a pane for production logic; `capture` exists for the
live-test harness that watches its own probe.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from providers.errors import SessionGone, SpawnFailed

NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$")
TMUX = "tmux"
TIMEOUT = 10
# The pane's first program: it reads the environment from a file (see launch.py).
LAUNCHER = str(Path(__file__).with_name("launch.py"))


class TmuxError(Exception):
    pass


class TmuxNotAnswering(TmuxError):
    """lab's tmux server did not answer within TIMEOUT (stopped, or too busy): nothing is known
    about any run's terminal until it does."""


def check_name(name: str) -> str:
    # '.' and ':' are tmux target separators, a leading '-' reads as an option.
    if not NAME_RE.match(name):
        raise ValueError(f"not a safe tmux name: {name!r}")
    return name


class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = check_name(socket)

    def _run(
        self, *args: str, stdin: bytes | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        # -f /dev/null: the operator's ~/.tmux.conf must not change key handling under lab.
        argv = [TMUX, "-L", self.socket, "-f", "/dev/null", *args]
        try:
            proc = subprocess.run(argv, input=stdin, capture_output=True, timeout=TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise TmuxNotAnswering(
                f"lab's tmux server (tmux -L {self.socket}) does not answer: no reply within {TIMEOUT} s. "
                "It may be stopped or overloaded; lab cannot check or drive any run until it answers."
            ) from None
        if check and proc.returncode != 0:
            raise TmuxError(proc.stderr.decode(errors="replace").strip() or f"tmux {args[0]} failed")
        return proc

    @staticmethod
    def _session(name: str) -> str:
        return f"={check_name(name)}"

    @staticmethod
    def _pane(name: str) -> str:
        return f"={check_name(name)}:"

    def new_session(
        self,
        name: str,
        *,
        cwd: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        env_dir: str | None = None,
        width: int = 200,
        height: int = 50,
    ) -> int:
        """Start argv in a new detached session with exactly `env`: the tmux server's own
        environment, inherited from lab, never leaks into the agent. Returns the pane pid.

        The environment travels in a 0600 file (in `env_dir`, a private directory, or the
        system's temp dir) that the launcher reads and deletes before it execs argv: nothing
        of it is on any command line, where every local user could read it."""
        fd, env_file = tempfile.mkstemp(prefix=".lab-env-", dir=env_dir)
        with os.fdopen(fd, "wb") as f:  # mkstemp: 0600, O_EXCL
            f.write(json.dumps(dict(env)).encode())
        command = [sys.executable, "-I", "-S", LAUNCHER, env_file, *argv]
        try:
            return self._new_session(name, cwd=cwd, command=command, width=width, height=height)
        except BaseException:
            # The launcher never ran (or never will): the file must not outlive the attempt.
            Path(env_file).unlink(missing_ok=True)
            raise

    def _new_session(self, name: str, *, cwd: str, command: Sequence[str], width: int, height: int) -> int:
        # remain-on-exit (on lab's own server, for every window) set in the same client command,
        # before the session exists: a CLI that dies at once still leaves its pane, and its last
        # words, for final_output.
        args = (
            "set-option", "-wg", "remain-on-exit", "on", ";",
            "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", check_name(name),
            "-x", str(width), "-y", str(height), "-c", cwd, "--", *command,
        )  # fmt: skip
        for attempt in range(3):
            try:
                proc = self._run(*args)
                break
            except TmuxError as exc:
                # A server still shutting down (a kill-server just before) refuses the client
                # once; a fresh one starts on the next try.
                if "server exited unexpectedly" not in str(exc) or attempt == 2:
                    raise SpawnFailed(f"tmux could not start the session: {exc}") from exc
                time.sleep(0.1)
        # A window-size of "manual" keeps the TUI at the size lab chose, attach or not.
        self._run("set-option", "-w", "-t", self._pane(name), "window-size", "manual", check=False)
        return int(proc.stdout.decode().strip().splitlines()[-1])

    def has_session(self, name: str) -> bool:
        return self._run("has-session", "-t", self._session(name), check=False).returncode == 0

    def pane_pid(self, name: str) -> int | None:
        proc = self._run("display-message", "-p", "-t", self._pane(name), "#{pane_pid}", check=False)
        text = proc.stdout.decode().strip()
        return int(text) if proc.returncode == 0 and text.isdigit() else None

    def pane_format(self, name: str, fmt: str) -> str | None:
        """A tmux format of the pane (terminal mode flags and the like), None when it is gone.
        tmux's own state about the pane, not the screen's content."""
        # display-message exits 0 with empty output for a missing target: the pane id, always
        # "%N" for a real pane, tells "gone" from a format that is empty.
        proc = self._run("display-message", "-p", "-t", self._pane(name), f"#{{pane_id}} {fmt}", check=False)
        pane_id, _, value = proc.stdout.decode().rstrip("\n").partition(" ")
        return value.strip() if proc.returncode == 0 and pane_id.startswith("%") else None

    def pane_exit(self, name: str) -> tuple[int, int | None] | None:
        """(pane pid, exit status) once the pane's program has exited (the pane stays, by
        remain-on-exit); None while it runs or when the session is gone. tmux's own state."""
        value = self.pane_format(name, "#{pane_dead} #{pane_pid} #{pane_dead_status}")
        if value is None or not value.startswith("1 "):
            return None
        _, pid, status = [*value.split(), ""][:3]
        return int(pid), int(status) if status.lstrip("-").isdigit() else None

    def final_output(self, name: str, *, lines: int = 40) -> str:
        """The last `lines` non-blank lines a dead pane shows, for the operator to read (why the
        program exited). Shown verbatim, never parsed: lab learns state from tmux's flags and
        the agent's own files, not from the screen."""
        proc = self._run("capture-pane", "-p", "-J", "-S", "-500", "-t", self._pane(name), check=False)
        if proc.returncode != 0:
            return ""
        rows = [row.rstrip() for row in proc.stdout.decode(errors="replace").splitlines()]
        # tmux's own footer on a dead pane ("Pane is dead (status 1, <date>)") is not the program's.
        rows = [row for row in rows if row.strip() and not row.startswith("Pane is dead (")]
        return "\n".join(rows[-lines:])

    def list_sessions(self) -> list[str]:
        proc = self._run("list-sessions", "-F", "#{session_name}", check=False)
        return proc.stdout.decode().split() if proc.returncode == 0 else []

    def paste(self, name: str, text: str) -> None:
        """One bracketed paste through a uniquely named buffer loaded from stdin (never argv,
        never a shared buffer), deleted afterwards whatever happens."""
        buffer = f"lab-{uuid.uuid4().hex}"
        try:
            self._run("load-buffer", "-b", buffer, "-", stdin=text.encode())
            self._require(name, "paste-buffer", "-p", "-b", buffer, "-t", self._pane(name))
        finally:
            self._run("delete-buffer", "-b", buffer, check=False)

    def send_keys(self, name: str, *keys: str) -> None:
        """Named keys (Enter, Escape, Down...). Text never goes through here: see paste."""
        self._require(name, "send-keys", "-t", self._pane(name), *keys)

    def _require(self, name: str, *args: str) -> None:
        proc = self._run(*args, check=False)
        if proc.returncode != 0:
            if not self.has_session(name):
                raise SessionGone(f"The tmux session {name} is gone.")
            raise TmuxError(proc.stderr.decode(errors="replace").strip())

    def kill_session(self, name: str, *, pane_pid: int | None = None) -> bool:
        """Kill the session `name`; with `pane_pid`, only if its pane is still that process: a
        session that has since taken the name (a restarted server reuses names) is someone
        else's. Returns whether a session was killed."""
        if pane_pid is None:
            return self._run("kill-session", "-t", self._session(name), check=False).returncode == 0
        # One query for the pid and the server-unique session id, then the kill by that id:
        # no window in which a new session of the same name could be hit instead.
        proc = self._run(
            "display-message", "-p", "-t", self._pane(name), "#{pane_pid} #{session_id}", check=False
        )
        pid, _, session_id = proc.stdout.decode().strip().partition(" ")
        if proc.returncode != 0 or pid != str(pane_pid) or not session_id.startswith("$"):
            return False
        return self._run("kill-session", "-t", session_id, check=False).returncode == 0

    def kill_server(self) -> None:
        """Kill lab's tmux server and wait (bounded) until it has really gone: a new session
        started while the old server still shuts down fails with "server exited unexpectedly"."""
        self._run("kill-server", check=False)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and self._run("list-sessions", check=False).returncode == 0:
            time.sleep(0.02)

    def capture(self, name: str) -> str:
        """For live-test harnesses watching their own probe only (docs/architecture.md, principle 2)."""
        return self._run("capture-pane", "-p", "-t", self._pane(name)).stdout.decode(errors="replace")
