"""Live-test helpers that drive a real CLI through lab's production adapter (not by hand),
shared by every provider's live tests."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from providers.base import AgentProvider
from providers.schema import Cursor, Message, RunHandle, TranscriptRead
from providers.tmux import Tmux


@dataclass
class AdapterRun:
    """One real CLI started by its provider's spawn, read by its read_transcript."""

    provider: AgentProvider
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


def spawn_adapter_run(
    provider: AgentProvider, tmp_path: Path, worktree: Path, options: dict[str, str]
) -> AdapterRun:
    """Start the real CLI through the production ``provider.spawn``, as run_start does."""
    handle = RunHandle(
        run_id=1,
        worktree=str(worktree),
        tmux_socket=f"labtest-{uuid.uuid4().hex[:10]}",
        tmux_session="lab-live",
        spool_dir=str(tmp_path / "spool"),
    )
    result = provider.spawn(handle, options)
    handle = replace(handle, session_id=result.session_id, transcript_path=result.transcript_path)
    return AdapterRun(provider=provider, handle=handle)
