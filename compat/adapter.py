"""Live-test helpers that drive a real CLI through lab's production adapter (not by hand),
shared by every provider's live tests and the conformance suite (compat/conformance.py)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Self

from providers.base import AgentProvider
from providers.schema import Cursor, Message, MessageKind, RunHandle, RunState, TranscriptRead
from providers.tmux import Tmux


@dataclass
class AdapterRun:
    """One real CLI started by its provider's spawn, read the way lab reads it: locate, then
    read from the cursor, and a new located identity starts over from an empty Cursor (the
    clear/epoch obligation)."""

    provider: AgentProvider
    handle: RunHandle
    path: str = ""
    cursor: Cursor = field(default_factory=Cursor)
    messages: list[Message] = field(default_factory=list)
    last: TranscriptRead | None = None
    identities: list[str] = field(default_factory=list)

    # How long wait() waits when the caller does not say.
    wait_timeout: ClassVar[float] = 60.0

    def refresh(self) -> TranscriptRead:
        """Read what was appended; follow a clear to the new transcript (a new epoch)."""
        path = self.provider.locate_transcript(self.handle)
        if path != self.path:
            self.path, self.cursor, self.messages = path, Cursor(), []
            self.identities.append(path)
        read = self.provider.read_transcript(path, self.cursor)
        if read.reset:
            self.messages = []
        self.messages.extend(read.messages)
        self.cursor, self.last = read.cursor, read
        return read

    @property
    def state(self) -> RunState:
        return self.last.state if self.last else RunState.IDLE

    def wait(self, predicate: Callable[[Self], bool], timeout: float | None = None, what: str = "") -> None:
        deadline = time.monotonic() + (self.wait_timeout if timeout is None else timeout)
        while True:
            self.refresh()
            if predicate(self):
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what or predicate}; last messages: {self.messages[-8:]!r}"
                )
            time.sleep(0.05)

    def texts(self, kind: str) -> list[str]:
        return [m.text for m in self.messages if m.kind == kind]

    def answered(self, answer: str) -> bool:
        return answer in self.texts(MessageKind.ASSISTANT_TEXT) and self.state == RunState.IDLE

    def alive(self) -> bool:
        return Tmux(self.handle.tmux_socket).has_session(self.handle.tmux_session)

    def pane(self) -> str:
        return Tmux(self.handle.tmux_socket).capture(self.handle.tmux_session)


def spawned[R: AdapterRun](
    provider: AgentProvider, handle: RunHandle, options: dict[str, str], run: type[R] = AdapterRun
) -> R:
    """``provider.spawn`` as run_start calls it; the handle it returns carries the session and
    transcript the spawn reported."""
    result = provider.spawn(handle, options)
    return run(
        provider=provider,
        handle=replace(handle, session_id=result.session_id, transcript_path=result.transcript_path),
    )


def spawn_adapter_run(
    provider: AgentProvider, tmp_path: Path, worktree: Path, options: dict[str, str], *, trusted: bool = False
) -> AdapterRun:
    """Start the real CLI through the production ``provider.spawn``, as run_start does (for a
    repository the operator trusts when `trusted`)."""
    handle = RunHandle(
        run_id=1,
        worktree=str(worktree),
        tmux_socket=f"labtest-{uuid.uuid4().hex[:10]}",
        tmux_session="lab-live",
        spool_dir=str(tmp_path / "spool"),
        trusted=trusted,
    )
    return spawned(provider, handle, options)


class AdapterRig:
    """What a provider's live-test rig shares (compat/<package>/adapter_harness.py): runs spawned
    through the production adapter on private tmux sockets, each in its own spool under
    `tmp_path`, every socket killed at `close()`, and the scripted model stopped. A subclass sets
    up `model`, `worktree` and lab's settings, and names its provider, socket prefix and session."""

    socket_prefix: ClassVar[str]
    session_name: ClassVar[str]
    reading: ClassVar[type[AdapterRun]] = AdapterRun
    tmp_path: Path
    worktree: Path
    model: Any

    def __init__(self) -> None:
        self.sockets: list[str] = []

    def provider(self) -> Any:
        raise NotImplementedError

    def handle(self, n: int = 1, *, trusted: bool = False) -> RunHandle:
        socket = f"{self.socket_prefix}-{uuid.uuid4().hex[:10]}"
        self.sockets.append(socket)
        run_dir = self.tmp_path / f"run{n}"
        run_dir.mkdir(exist_ok=True, mode=0o700)
        return RunHandle(
            run_id=n,
            worktree=str(self.worktree),
            tmux_socket=socket,
            tmux_session=self.session_name,
            spool_dir=str(run_dir / "spool"),
            trusted=trusted,
        )

    def start(self, provider: Any = None, options: dict[str, str] | None = None, n: int = 1) -> Any:
        """A run started as run_start starts it: the declared spawn options' defaults, then
        `options`."""
        provider = provider or self.provider()
        defaults = {o.name: o.default for o in provider.spawn_options()}
        return spawned(provider, self.handle(n), {**defaults, **(options or {})}, self.reading)

    def close(self) -> None:
        for socket in self.sockets:
            Tmux(socket).kill_server()
            # tmux leaves its socket file behind
            Path(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", socket).unlink(missing_ok=True)
        self.model.stop()
