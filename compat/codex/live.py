"""Codex's side of the live-TUI harness (compat/live.py is the shared part): its readiness
footer, its argv, where it writes rollouts, a hook spool and predicates over rollout lines.

The harness may read its own probe's pane (``pane()``/``wait_pane()``) to know when the TUI is up
or a picker is drawn; production code never does (docs/architecture.md, principle 2).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from compat.codex.home import codex_binary
from compat.live import LiveTUI, alive

# The composer's footer: drawn once the TUI takes input, and again at every idle moment.
READY_RE = re.compile(r"\? for shortcuts")
# Screens that would hold a first start; the home this harness prepares must avoid every one.
FIRST_RUN_RE = re.compile(
    r"Trust this folder\?|Hooks need review|Sign in with ChatGPT|Welcome to Codex|Try new model"
)


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


class CodexTUI(LiveTUI):
    """One ``codex --no-daemon`` TUI in a tmux session on its own socket
    (``tmux -L labtest-codex-<hex>``)."""

    ready_re = READY_RE
    ready_settle = 0.3
    socket_prefix = "labtest-codex"
    tmux_options = ("remain-on-exit on",)
    kill_wait = 5.0

    def __init__(
        self,
        env: dict[str, str],
        cwd: Path,
        *,
        width: int = 120,
        height: int = 40,
        binary: Path | None = None,
    ) -> None:
        super().__init__(env, cwd, binary=binary or codex_binary(), width=width, height=height)
        self.codex_home = Path(env["CODEX_HOME"])

    def spawn_argv(self, *extra: str) -> list[str]:
        """The command tmux runs: the native binary with ``--no-daemon`` (without it the TUI
        starts an app-server daemon in its own session that outlives tmux)."""
        return [str(self.binary), "--no-daemon", *extra]

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

    def wait_for(
        self,
        path: Path | Callable[[], Path | None],
        predicate: Callable[[list[dict[str, Any]]], Any],
        timeout: float = 60.0,
    ) -> Any:
        """Poll the parsed rollout (a path, or a callable that finds it) until
        ``predicate(lines)`` is truthy; return its value. A thread's rollout has no name before
        it starts, so the path comes first here."""
        return super().wait_for(predicate, timeout, path=path)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return LiveTUI.read_lines(Path(path))


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
