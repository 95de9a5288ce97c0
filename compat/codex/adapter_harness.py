"""The real Codex TUI driven through lab's production adapter (providers.codex), offline.

One `CodexAdapterRig` per test: a scripted Responses API model, a private HOME + CODEX_HOME
(compat.codex.home) and a git worktree, lab's settings pointed at them the way an operator's
deployment would be (LAB_AGENT_HOME, LAB_AGENT_ENV, LAB_AGENT_BIN_DIR), and runs spawned through
`CodexProvider.spawn` on private tmux sockets, every one killed at `close()`.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from compat.codex.home import KEY_ENV, codex_binary, prepare_home
from compat.codex.scripted_model import Script, ScriptedModel
from providers.schema import Cursor, Message, MessageKind, RunHandle, RunState, TranscriptRead
from providers.tmux import Tmux


def make_worktree(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git = ["git", "-C", str(path), "-c", "user.email=lab@example.invalid", "-c", "user.name=lab"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (path / "README.md").write_text("# scratch worktree for Codex's live tests\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "initial commit"], check=True)
    return path


@dataclass
class Reading:
    """A run read the way lab reads it: locate, read on from the cursor, a new identity starts
    over from an empty Cursor."""

    provider: Any
    handle: RunHandle
    path: str = ""
    cursor: Cursor = field(default_factory=Cursor)
    messages: list[Message] = field(default_factory=list)
    last: TranscriptRead | None = None
    identities: list[str] = field(default_factory=list)

    def refresh(self) -> TranscriptRead:
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

    def texts(self, kind: MessageKind) -> list[str]:
        return [m.text for m in self.messages if m.kind == kind]

    def answered(self, answer: str) -> bool:
        return answer in self.texts(MessageKind.ASSISTANT_TEXT) and self.state == RunState.IDLE

    def wait(self, predicate: Callable[[Reading], bool], *, timeout: float = 30.0, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.refresh()
            if predicate(self):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; last messages: {self.messages[-6:]!r}")
            time.sleep(0.05)


class CodexAdapterRig:
    def __init__(self, tmp_path: Path, settings: Any, *, script: Script | None = None) -> None:
        self.tmp_path = tmp_path
        self.model = ScriptedModel(script or Script()).start()
        self.home = tmp_path / "home"
        self.worktree = make_worktree(tmp_path / "wt")
        self.key = f"sk-scripted-{uuid.uuid4().hex}"
        env = prepare_home(self.home, self.worktree, self.model.url, api_key=self.key)
        self.codex_home = Path(env["CODEX_HOME"])
        settings.LAB_AGENT_HOME = str(self.home)
        settings.LAB_AGENT_ENV = {KEY_ENV: self.key, "CODEX_HOME": str(self.codex_home)}
        settings.LAB_AGENT_BIN_DIR = str(codex_binary().parent)
        self.sockets: list[str] = []

    def provider(self) -> Any:
        from providers.codex import CodexProvider

        return CodexProvider()

    def handle(self, n: int = 1) -> RunHandle:
        socket = f"labcodex-{uuid.uuid4().hex[:10]}"
        self.sockets.append(socket)
        run_dir = self.tmp_path / f"run{n}"
        run_dir.mkdir(exist_ok=True, mode=0o700)
        return RunHandle(
            run_id=n,
            worktree=str(self.worktree),
            tmux_socket=socket,
            tmux_session="lab-codex",
            spool_dir=str(run_dir / "spool"),
        )

    def start(self, provider: Any = None, options: dict[str, str] | None = None, n: int = 1) -> Reading:
        provider = provider or self.provider()
        handle = self.handle(n)
        defaults = {o.name: o.default for o in provider.spawn_options()}
        result = provider.spawn(handle, {**defaults, **(options or {})})
        handle = replace(handle, session_id=result.session_id, transcript_path=result.transcript_path)
        return Reading(provider=provider, handle=handle)

    def close(self) -> None:
        for socket in self.sockets:
            Tmux(socket).kill_server()
            # tmux leaves its socket file behind
            Path(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", socket).unlink(missing_ok=True)
        self.model.stop()
