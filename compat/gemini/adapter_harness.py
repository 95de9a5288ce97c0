"""The real Gemini CLI TUI driven through lab's production adapter (providers.gemini), offline.

One `GeminiAdapterRig` per test: a scripted Gemini API, a private home (compat.gemini.home) and
a git worktree, lab's settings pointed at them the way an operator's deployment would be
(LAB_AGENT_HOME, LAB_AGENT_ENV, LAB_AGENT_BIN_DIR), and runs spawned through
`GeminiProvider.spawn` on private tmux sockets, every one killed at `close()`.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from compat.adapter import AdapterRig, AdapterRun
from compat.gemini.home import launcher_dir, prepare_home
from compat.gemini.scripted_model import Script, ScriptedModel
from compat.live import make_worktree


class Reading(AdapterRun):
    wait_timeout = 30.0


class GeminiAdapterRig(AdapterRig):
    socket_prefix = "labgemini"
    session_name = "lab-gemini"
    reading = Reading

    def __init__(self, tmp_path: Path, settings: Any, *, script: Script | None = None) -> None:
        super().__init__()
        self.tmp_path = tmp_path
        self.model = ScriptedModel(script or Script()).start()
        self.home = tmp_path / "home"
        self.worktree = make_worktree(tmp_path / "wt")
        self.key = f"scripted-{uuid.uuid4().hex}"
        env = prepare_home(self.home, self.model.url, api_key=self.key)
        settings.LAB_AGENT_HOME = str(self.home)
        settings.LAB_AGENT_ENV = {
            "GEMINI_API_KEY": self.key,
            "GOOGLE_GEMINI_BASE_URL": env["GOOGLE_GEMINI_BASE_URL"],
        }
        settings.LAB_AGENT_BIN_DIR = str(launcher_dir())

    def provider(self) -> Any:
        from providers.gemini import GeminiProvider

        return GeminiProvider()
