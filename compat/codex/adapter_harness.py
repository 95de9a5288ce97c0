"""The real Codex TUI driven through lab's production adapter (providers.codex), offline.

One `CodexAdapterRig` per test: a scripted Responses API model, a private HOME + CODEX_HOME
(compat.codex.home) and a git worktree, lab's settings pointed at them the way an operator's
deployment would be (LAB_AGENT_HOME, LAB_AGENT_ENV, LAB_AGENT_BIN_DIR), and runs spawned through
`CodexProvider.spawn` on private tmux sockets, every one killed at `close()`.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from compat.adapter import AdapterRun, spawned
from compat.codex.home import KEY_ENV, launcher_dir, prepare_home
from compat.codex.scripted_model import Script, ScriptedModel
from compat.live import make_worktree
from providers.schema import RunHandle
from providers.tmux import Tmux


class Reading(AdapterRun):
    """A run read the way lab reads it (compat.adapter.AdapterRun)."""

    wait_timeout = 30.0


class CodexAdapterRig:
    def __init__(
        self, tmp_path: Path, settings: Any, *, script: Script | None = None, max_retries: int | None = None
    ) -> None:
        self.tmp_path = tmp_path
        self.model = ScriptedModel(script or Script()).start()
        self.home = tmp_path / "home"
        self.worktree = make_worktree(tmp_path / "wt")
        self.key = f"sk-scripted-{uuid.uuid4().hex}"
        env = prepare_home(
            self.home, self.worktree, self.model.url, api_key=self.key, max_retries=max_retries
        )
        self.codex_home = Path(env["CODEX_HOME"])
        settings.LAB_AGENT_HOME = str(self.home)
        settings.LAB_AGENT_ENV = {KEY_ENV: self.key, "CODEX_HOME": str(self.codex_home)}
        settings.LAB_AGENT_BIN_DIR = str(launcher_dir())
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
        return spawned(provider, handle, {**defaults, **(options or {})}, Reading)

    def close(self) -> None:
        for socket in self.sockets:
            Tmux(socket).kill_server()
            # tmux leaves its socket file behind
            Path(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", socket).unlink(missing_ok=True)
        self.model.stop()
