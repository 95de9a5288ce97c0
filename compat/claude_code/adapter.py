"""Live-test helpers that drive the real CLI through lab's production adapter (not by hand)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from providers.claude_code import ClaudeCodeProvider
from providers.schema import Cursor, Message, RunHandle, TranscriptRead
from providers.tmux import Tmux


@dataclass
class AdapterRun:
    """One real claude started by ClaudeCodeProvider.spawn, read by its read_transcript."""

    provider: ClaudeCodeProvider
    handle: RunHandle
    messages: list[Message] = field(default_factory=list)
    cursor: Cursor = field(default_factory=Cursor)
    last: TranscriptRead | None = None
    path: str = ""

    def refresh(self) -> TranscriptRead:
        """Read what was appended; follow a clear to the new transcript (a new epoch)."""
        path = self.provider.locate_transcript(self.handle)
        if path != self.path:
            self.path, self.cursor, self.messages = path, Cursor(path=path), []
        read = self.provider.read_transcript(path, self.cursor)
        if read.reset:
            self.messages = []
        self.messages.extend(read.messages)
        self.cursor, self.last = read.cursor, read
        return read

    def wait(self, predicate: Callable[[AdapterRun], bool], timeout: float = 60.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.refresh()
            if predicate(self):
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what or predicate}: {self.messages[-8:]!r}")

    def texts(self, kind: str) -> list[str]:
        return [m.text for m in self.messages if m.kind == kind]

    def pane(self) -> str:
        return Tmux(self.handle.tmux_socket).capture(self.handle.tmux_session)


def spawn_adapter_run(tmp_path: Path, worktree: Path, options: dict[str, str] | None = None) -> AdapterRun:
    provider = ClaudeCodeProvider()
    handle = RunHandle(
        run_id=1,
        worktree=str(worktree),
        tmux_socket=f"labtest-{uuid.uuid4().hex[:10]}",
        tmux_session="lab-live",
        spool_dir=str(tmp_path / "spool"),
    )
    result = provider.spawn(handle, options or {"permission_mode": "default"})
    handle = replace(handle, session_id=result.session_id, transcript_path=result.transcript_path)
    return AdapterRun(provider=provider, handle=handle)


def recorded(run: AdapterRun, tool_use_id: str, timeout: float = 30.0) -> dict[str, Any]:
    """The transcript's user entry carrying the tool_result for `tool_use_id`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = run.provider.locate_transcript(run.handle)
        try:
            with open(path, "rb") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            lines = []
        for raw in lines:
            if tool_use_id.encode() not in raw or b'"tool_result"' not in raw:
                continue
            entry = json.loads(raw)
            content = entry.get("message", {}).get("content")
            blocks = content if entry.get("type") == "user" and isinstance(content, list) else []
            if any(b.get("tool_use_id") == tool_use_id for b in blocks if isinstance(b, dict)):
                return entry
        time.sleep(0.1)
    raise AssertionError(f"no tool_result for {tool_use_id}:\n{run.pane()}")


def backstop_warnings(run: AdapterRun, tool_use_id: str) -> list[str]:
    run.refresh()
    return [m.text for m in run.messages if m.native_id == f"{tool_use_id}:backstop"]
