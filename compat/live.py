"""Live-test harness shared by every provider: a real agent CLI's TUI in tmux on a private socket.

The harness may read its own probe's pane (``pane()``/``wait_pane()``) to know when the TUI is
up or a picker is drawn; production code never does (docs/architecture.md, principle 2).

A provider subclasses LiveTUI in ``compat/<pkg>/live.py``: its ``ready_re`` (what its composer
footer looks like), the argv it starts with (``spawn_argv``), and where its transcript is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Self


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class LiveTUIError(RuntimeError):
    pass


class LiveTUI:
    """One CLI's TUI in a tmux session on its own socket (``tmux -L <socket_prefix>-<hex>``)."""

    # What the pane shows once the composer is up; each provider's subclass sets its own.
    ready_re: re.Pattern[str] = re.compile(r"(?!)")
    # How long the footer must stand still before wait_ready returns (0: as soon as it shows).
    ready_settle = 0.0
    socket_prefix = "labtest"
    # The tmux server's options (its config file): the pane stays after the CLI exits, so a
    # test reads why.
    tmux_options: tuple[str, ...] = ("remain-on-exit on", "history-limit 10000", "focus-events on")
    # How long kill() waits for the server and the pane to go before it SIGKILLs them.
    kill_wait = 3.0

    def __init__(
        self,
        env: dict[str, str],
        cwd: Path,
        *,
        binary: Path,
        session_id: str | None = None,
        width: int = 120,
        height: int = 45,
    ) -> None:
        self.env = dict(env)
        self.cwd = Path(cwd)
        self.home = Path(env["HOME"])
        self.session_id = session_id or str(uuid.uuid4())
        self.width, self.height = width, height
        self.binary = Path(binary)
        self.socket = f"{self.socket_prefix}-{uuid.uuid4().hex[:10]}"
        self.target = "probe:0.0"
        self.argv: list[str] = []
        self.started_at: float | None = None
        self.ready_at: float | None = None
        self._conf: str | None = None
        self.server_pid: int | None = None
        self.pane_pid: int | None = None
        self.socket_path: str | None = None

    # -- tmux plumbing
    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in self.env.items() if not k.startswith("TMUX")}
        cmd = ["tmux", "-L", self.socket]
        if self._conf:
            cmd += ["-f", self._conf]
        cp = subprocess.run(cmd + list(args), env=env, capture_output=True, text=True, timeout=30)
        if check and cp.returncode != 0:
            raise LiveTUIError(f"tmux {' '.join(args)} failed: {cp.stderr.strip()}")
        return cp

    def spawn_argv(self, *extra: str) -> list[str]:
        """The command tmux runs."""
        return [str(self.binary), *extra]

    def start(self, *extra: str) -> Self:
        """Start ``spawn_argv(*extra)`` in the tmux session (never through a shell)."""
        fd, self._conf = tempfile.mkstemp(prefix="labtest-tmux-", suffix=".conf")
        with os.fdopen(fd, "w") as f:
            f.write("".join(f"set -g {option}\n" for option in self.tmux_options))
        argv = self.spawn_argv(*extra)
        self.argv = argv
        env_args: list[str] = []
        for k, v in self.env.items():
            env_args += ["-e", f"{k}={v}"]
        self.started_at = time.monotonic()
        self.tmux(
            "new-session",
            "-d",
            "-s",
            "probe",
            "-x",
            str(self.width),
            "-y",
            str(self.height),
            "-c",
            str(self.cwd),
            *env_args,
            "--",
            *argv,
        )
        with contextlib.suppress(Exception):
            info = self.tmux(
                "display-message", "-p", "-t", self.target, "#{pid} #{pane_pid} #{socket_path}"
            ).stdout.split()
            self.server_pid, self.pane_pid, self.socket_path = int(info[0]), int(info[1]), info[2]
        return self

    def kill(self) -> None:
        """Kill this probe's tmux server (and so the CLI). Never raises; falls back to SIGKILL by pid."""
        with contextlib.suppress(Exception):
            self.tmux("kill-server", check=False)
        deadline = time.monotonic() + self.kill_wait
        for pid in (self.server_pid, self.pane_pid):
            if not pid:
                continue
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        # A killed server leaves its socket file behind; one per test adds up.
        if self.socket_path and not (self.server_pid and alive(self.server_pid)):
            with contextlib.suppress(OSError):
                os.unlink(self.socket_path)
        if self._conf:
            with contextlib.suppress(OSError):
                os.unlink(self._conf)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    # -- pane (harness only)
    def pane(self, escapes: bool = False) -> str:
        args = ["capture-pane", "-p", "-t", self.target]
        if escapes:
            args.insert(1, "-e")
        return self.tmux(*args).stdout

    def pane_dead(self) -> bool:
        cp = self.tmux("display-message", "-p", "-t", self.target, "#{pane_dead}", check=False)
        return cp.stdout.strip() == "1"

    def wait_pane(
        self, pattern: str | re.Pattern[str], timeout: float = 30.0, settle: float = 0.0
    ) -> re.Match[str]:
        """Wait until the pane matches; with ``settle`` also until it stopped changing for that long.

        Keys sent the instant a picker is drawn can be dropped (observed: the picker is painted
        before it takes input, worse under load); dialog drivers should pass ``settle=0.5``.
        """
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        last, since = None, time.monotonic()
        while True:
            text = self.pane()
            if text != last:
                last, since = text, time.monotonic()
            m = rx.search(text)
            if m and time.monotonic() - since >= settle:
                return m
            if self.pane_dead():
                raise LiveTUIError(f"the CLI exited while waiting for {rx.pattern!r}:\n{text}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"pane never matched {rx.pattern!r}; pane:\n{text}")
            time.sleep(0.1)

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Wait for the composer footer; returns seconds since start."""
        self.wait_pane(self.ready_re, timeout, settle=self.ready_settle)
        self.ready_at = time.monotonic()
        return self.ready_at - (self.started_at or self.ready_at)

    def wait_input_live(self, timeout: float = 30.0) -> float:
        """Wait until the composer takes keys, for a TUI that turns on mouse tracking when its
        input goes live (Claude Code's COMPAT §6, readiness: its footer is drawn before). Reads
        tmux's terminal-mode flag, not the screen; returns seconds since start."""
        deadline = time.monotonic() + timeout
        while True:
            flag = self.tmux("display-message", "-p", "-t", self.target, "#{mouse_any_flag}", check=False)
            if flag.stdout.strip() == "1":
                return time.monotonic() - (self.started_at or time.monotonic())
            if self.pane_dead():
                raise LiveTUIError(f"the CLI exited before its input went live:\n{self.pane()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the input never went live (mouse tracking off); pane:\n{self.pane()}")
            time.sleep(0.05)

    # -- input
    def send_paste(self, text: str, enter: bool = False) -> None:
        buf = f"lab-{uuid.uuid4().hex[:8]}"
        self.tmux("set-buffer", "-b", buf, "--", text)
        self.tmux("paste-buffer", "-p", "-d", "-b", buf, "-t", self.target)
        if enter:
            self.send_keys("Enter")

    def send_keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.target, *keys)

    def send_literal(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.target, "-l", "--", text)

    def prompt(self, text: str) -> None:
        """Paste ``text`` and press Enter (the submit recipe)."""
        self.send_paste(text, enter=True)

    # -- transcript
    @property
    def transcript_path(self) -> Path:
        """Where this session's transcript is written: the provider's subclass knows."""
        raise NotImplementedError

    @staticmethod
    def read_lines(path: Path) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        try:
            data = path.read_text()
        except FileNotFoundError:
            return out
        for line in data.splitlines():
            line = line.strip()
            if not line:
                continue
            with contextlib.suppress(ValueError):  # a half-written last line
                out.append(json.loads(line))
        return out

    def lines(self, path: Path | None = None) -> list[dict[str, Any]]:
        return self.read_lines(path or self.transcript_path)

    def wait_for(
        self,
        predicate: Callable[[list[dict[str, Any]]], Any],
        timeout: float = 60.0,
        path: Path | Callable[[], Path | None] | None = None,
    ) -> Any:
        """Poll the parsed transcript until ``predicate(lines)`` is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while True:
            p = path() if callable(path) else path
            lines = self.lines(p) if (p is not None or path is None) else []
            val = predicate(lines)
            if val:
                return val
            if self.pane_dead():
                raise LiveTUIError("the CLI exited; pane:\n" + self.pane())
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"transcript predicate not met in {timeout}s ({len(lines)} lines); pane:\n" + self.pane()
                )
            time.sleep(0.05)


@contextlib.contextmanager
def tui_factory[T: LiveTUI](make: Callable[[], T]) -> Iterator[Callable[..., T]]:
    """A live-TUI fixture's body: yields ``start(*extra, ready=True)``, which starts a TUI made
    by ``make`` with ``extra`` and, with ``ready``, waits for its composer. Every TUI it started
    is killed on exit, pass or fail."""
    started: list[T] = []

    def start(*extra: str, ready: bool = True) -> T:
        tui = make()
        started.append(tui)
        tui.start(*extra)
        if ready:
            tui.wait_ready()
        return tui

    try:
        yield start
    finally:
        for tui in started:
            tui.kill()


def _git(wt: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid", *args],
        cwd=wt,
        check=True,
        capture_output=True,
    )


def make_worktree(path: Path) -> Path:
    """A fresh git repository with one commit: what every live test starts its CLI in."""
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("# scratch worktree for live tests\n")
    _git(path, "add", "README.md")
    _git(path, "commit", "-q", "-m", "initial commit")
    return path
