"""The real Codex TUI driven through lab's production adapter (providers.codex), offline.

One `CodexAdapterRig` per test: a scripted Responses API model, a private HOME + CODEX_HOME
(compat.codex.home) and a git worktree, lab's settings pointed at them the way an operator's
deployment would be (LAB_AGENT_HOME, LAB_AGENT_ENV, LAB_AGENT_BIN_DIR), and runs spawned through
`CodexProvider.spawn` on private tmux sockets, every one killed at `close()`.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from compat.adapter import AdapterRig, AdapterRun
from compat.codex.home import KEY_ENV, launcher_dir, prepare_home
from compat.codex.scripted_model import Script, ScriptedModel
from compat.live import make_worktree


class Reading(AdapterRun):
    """A run read the way lab reads it (compat.adapter.AdapterRun)."""

    wait_timeout = 30.0


class CodexAdapterRig(AdapterRig):
    socket_prefix = "labcodex"
    session_name = "lab-codex"
    reading = Reading

    def __init__(
        self, tmp_path: Path, settings: Any, *, script: Script | None = None, max_retries: int | None = None
    ) -> None:
        super().__init__()
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

    def provider(self) -> Any:
        from providers.codex import CodexProvider

        return CodexProvider()
