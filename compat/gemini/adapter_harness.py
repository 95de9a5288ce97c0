"""The real Gemini CLI TUI driven through lab's production adapter (providers.gemini), offline.

One `GeminiAdapterRig` per test: a scripted Gemini API, a private home (compat.gemini.home) and
a git worktree, lab's settings pointed at them the way an operator's deployment would be
(LAB_AGENT_HOME, LAB_AGENT_ENV, LAB_AGENT_BIN_DIR), and runs spawned through
`GeminiProvider.spawn` on private tmux sockets, every one killed at `close()`.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from compat.adapter import AdapterRun, spawned
from compat.gemini.home import launcher_dir, prepare_home
from compat.gemini.scripted_model import Script, ScriptedModel
from compat.live import make_worktree
from providers.schema import RunHandle
from providers.tmux import Tmux


class Reading(AdapterRun):
    wait_timeout = 30.0


class GeminiAdapterRig:
    def __init__(self, tmp_path: Path, settings: Any, *, script: Script | None = None) -> None:
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
        self.sockets: list[str] = []

    def provider(self) -> Any:
        from providers.gemini import GeminiProvider

        return GeminiProvider()

    def handle(self, n: int = 1, *, trusted: bool = False) -> RunHandle:
        socket = f"labgemini-{uuid.uuid4().hex[:10]}"
        self.sockets.append(socket)
        run_dir = self.tmp_path / f"run{n}"
        run_dir.mkdir(exist_ok=True, mode=0o700)
        return RunHandle(
            run_id=n,
            worktree=str(self.worktree),
            tmux_socket=socket,
            tmux_session="lab-gemini",
            spool_dir=str(run_dir / "spool"),
            trusted=trusted,
        )

    def start(self, provider: Any = None, options: dict[str, str] | None = None, n: int = 1) -> Reading:
        provider = provider or self.provider()
        handle = self.handle(n)
        defaults = {o.name: o.default for o in provider.spawn_options()}
        return spawned(provider, handle, {**defaults, **(options or {})}, Reading)

    def close(self) -> None:
        for socket in self.sockets:
            Tmux(socket).kill_server()
            Path(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", socket).unlink(missing_ok=True)
        self.model.stop()
