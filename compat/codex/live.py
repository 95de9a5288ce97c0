"""Live-test harness for the real Codex TUI in tmux on a private socket.

The harness may read its own probe's pane (``pane()``/``wait_pane()``) to know when the TUI is up
or a picker is drawn; production code never does (docs/architecture.md, principle 2).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from compat.codex.home import codex_binary

# The composer's footer: drawn once the TUI takes input, and again at every idle moment.
READY_RE = re.compile(r"\? for shortcuts")
# Screens that would hold a first start; the home this harness prepares must avoid every one.
FIRST_RUN_RE = re.compile(
    r"Trust this folder\?|Hooks need review|Sign in with ChatGPT|Welcome to Codex|Try new model"
)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def codex_processes(codex_home: Path | str) -> list[int]:
    """Every live process on the machine running a codex binary with this CODEX_HOME (read from
    /proc: the daemon the TUI would start by default lives in its own session, so tmux's process
    tree cannot show it)."""
    marker = f"CODEX_HOME={codex_home}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            exe = os.readlink(f"/proc/{entry}/exe")
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if "codex" in os.path.basename(exe) and marker in environ and alive(int(entry)):
            found.append(int(entry))
    return found


class CodexTUIError(RuntimeError):
    pass


class CodexTUI:
    """One ``codex --no-daemon`` TUI in a tmux session on its own socket
    (``tmux -L labtest-codex-<hex>``)."""

    def __init__(
        self,
        env: dict[str, str],
        cwd: Path,
        *,
        width: int = 120,
        height: int = 40,
        binary: Path | None = None,
    ) -> None:
        self.env = dict(env)
        self.cwd = Path(cwd)
        self.codex_home = Path(env["CODEX_HOME"])
        self.width, self.height = width, height
        self.binary = Path(binary) if binary else codex_binary()
        self.socket = f"labtest-codex-{uuid.uuid4().hex[:10]}"
        self.target = "probe:0.0"
        self.argv: list[str] = []
        self.started_at: float | None = None
        self.server_pid: int | None = None
        self.pane_pid: int | None = None
        self.socket_path: str | None = None

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in self.env.items() if not k.startswith("TMUX")}
        cp = subprocess.run(
            ["tmux", "-L", self.socket, *args], env=env, capture_output=True, text=True, timeout=30
        )
        if check and cp.returncode != 0:
            raise CodexTUIError(f"tmux {' '.join(args)} failed: {cp.stderr.strip()}")
        return cp

    def spawn_argv(self, *extra: str) -> list[str]:
        """The command tmux runs: the native binary with ``--no-daemon`` (without it the TUI
        starts an app-server daemon in its own session that outlives tmux)."""
        return [str(self.binary), "--no-daemon", *extra]

    def start(self, *extra: str) -> CodexTUI:
        self.argv = self.spawn_argv(*extra)
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
            *self.argv,
        )
        self.tmux("set-option", "-t", "probe", "remain-on-exit", "on")
        with contextlib.suppress(Exception):
            info = self.tmux(
                "display-message", "-p", "-t", self.target, "#{pid} #{pane_pid} #{socket_path}"
            ).stdout.split()
            self.server_pid, self.pane_pid, self.socket_path = int(info[0]), int(info[1]), info[2]
        return self

    def kill(self) -> None:
        """Kill this probe's tmux server (and so codex). Never raises; SIGKILLs by pid as a
        last resort so a failed test leaves nothing behind."""
        with contextlib.suppress(Exception):
            self.tmux("kill-server", check=False)
        deadline = time.monotonic() + 5
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

    # -- pane (harness only)
    def pane(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.target).stdout

    def pane_dead(self) -> bool:
        cp = self.tmux("display-message", "-p", "-t", self.target, "#{pane_dead}", check=False)
        return cp.stdout.strip() == "1"

    def wait_pane(
        self, pattern: str | re.Pattern[str], timeout: float = 30.0, settle: float = 0.0
    ) -> re.Match[str]:
        """Wait until the pane matches; with ``settle`` also until it stopped changing that long
        (keys sent while a picker is first painting can be dropped)."""
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
                raise CodexTUIError(f"codex exited while waiting for {rx.pattern!r}:\n{text}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"pane never matched {rx.pattern!r}; pane:\n{text}")
            time.sleep(0.1)

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Wait for the composer footer; returns seconds since start."""
        self.wait_pane(READY_RE, timeout, settle=0.3)
        return time.monotonic() - (self.started_at or time.monotonic())

    # -- input
    def send_paste(self, text: str, enter: bool = False) -> None:
        """Bracketed paste (``paste-buffer -p``): the composer takes it as one block, newlines
        included, and never as keystrokes."""
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
        self.send_paste(text, enter=True)

    # -- rollouts
    @property
    def sessions_dir(self) -> Path:
        return self.codex_home / "sessions"

    def rollouts(self) -> list[Path]:
        """Every rollout file under ``$CODEX_HOME/sessions``, oldest name first (the name starts
        with the thread's creation time)."""
        if not self.sessions_dir.is_dir():
            return []
        return sorted(self.sessions_dir.glob("*/*/*/rollout-*.jsonl"), key=lambda p: p.name)

    def wait_rollouts(self, count: int, timeout: float = 60.0) -> list[Path]:
        deadline = time.monotonic() + timeout
        while len(found := self.rollouts()) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(found)} rollouts, wanted {count}; pane:\n{self.pane()}")
            time.sleep(0.1)
        return found

    @staticmethod
    def read_lines(path: Path) -> list[dict[str, Any]]:
        return read_jsonl(path)

    def wait_for(
        self,
        path: Path | Callable[[], Path | None],
        predicate: Callable[[list[dict[str, Any]]], Any],
        timeout: float = 60.0,
    ) -> Any:
        """Poll the parsed rollout until ``predicate(lines)`` is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while True:
            p = path() if callable(path) else path
            lines = read_jsonl(p) if p is not None else []
            val = predicate(lines)
            if val:
                return val
            if self.pane_dead():
                raise CodexTUIError("codex exited; pane:\n" + self.pane())
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"rollout predicate not met in {timeout}s ({len(lines)} lines); pane:\n" + self.pane()
                )
            time.sleep(0.05)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    try:
        data = Path(path).read_text()
    except FileNotFoundError:
        return out
    for line in data.splitlines():
        if line.strip():
            with contextlib.suppress(ValueError):  # a half-written last line
                out.append(json.loads(line))
    return out


class HookSpool:
    """A hook command that appends each event's stdin payload to a JSONL file, and its reader.

    ``hooks()`` is the ``hooks.json`` document to pass to :func:`compat.codex.home.prepare_home`.
    """

    SCRIPT = (
        "import json, sys, time\n"
        "event, spool = sys.argv[1], sys.argv[2]\n"
        "data = sys.stdin.read()\n"
        "entry = {'event': event, 'ts': time.time(), 'payload': json.loads(data or 'null')}\n"
        "with open(spool, 'a') as f:\n"
        "    f.write(json.dumps(entry) + '\\n')\n"
    )

    def __init__(self, folder: Path, events: Iterable[str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.script = self.folder / "hook_spool.py"
        self.script.write_text(self.SCRIPT)
        self.path = self.folder / "hooks.jsonl"
        self.events = list(events)

    def command(self, event: str) -> str:
        return f"python3 {self.script} {event} {self.path}"

    def hooks(self) -> dict[str, Any]:
        return {
            "hooks": {
                ev: [{"hooks": [{"type": "command", "command": self.command(ev)}]}] for ev in self.events
            }
        }

    def entries(self, event: str | None = None) -> list[dict[str, Any]]:
        return [e for e in read_jsonl(self.path) if event is None or e["event"] == event]

    def wait(self, event: str, count: int = 1, timeout: float = 60.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(found := self.entries(event)) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(found)} {event} hook calls, wanted {count}")
            time.sleep(0.05)
        return found


# -- predicates over parsed rollout lines


def payloads(lines: Iterable[dict[str, Any]], kind: str, subtype: str | None = None) -> list[dict[str, Any]]:
    """The payloads of lines of ``type == kind`` (and ``payload.type == subtype`` if given)."""
    return [
        e["payload"]
        for e in lines
        if e.get("type") == kind and (subtype is None or e.get("payload", {}).get("type") == subtype)
    ]


def message_texts(lines: Iterable[dict[str, Any]], role: str) -> list[str]:
    out = []
    for p in payloads(lines, "response_item", "message"):
        if p.get("role") == role:
            out.append("".join(c.get("text", "") for c in p.get("content") or []))
    return out


def events(lines: Iterable[dict[str, Any]], subtype: str) -> list[dict[str, Any]]:
    return payloads(lines, "event_msg", subtype)
