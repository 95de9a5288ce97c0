"""Gemini CLI's conformance driver: the real pinned binary against the scripted Gemini API, in a
private home, through the production adapter (docs/providers.md, "Join the conformance suite").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compat.conformance import Driver

SLOW_TOKEN = "LAB-CONFORMANCE-SLOW"


class GeminiDriver(Driver):
    provider_id = "gemini"
    dotted = "providers.gemini.GeminiProvider"

    _rig: Any = None

    def rig(self) -> Any:
        if self._rig is None:
            from compat.gemini.adapter_harness import GeminiAdapterRig

            settings = self.request.getfixturevalue("settings")
            self._rig = GeminiAdapterRig(self.tmp_path / "gemini", settings)
        return self._rig

    def configure(self, *, live: bool) -> None:
        settings = self.request.getfixturevalue("settings")
        if live:
            self.rig()
        else:
            (self.tmp_path / "home").mkdir(exist_ok=True)
            settings.LAB_AGENT_HOME = str(self.tmp_path / "home")
            settings.LAB_AGENT_ENV = {}

    def worktree(self, *, live: bool = False) -> Path:
        if live:
            return Path(self.rig().worktree)
        return Path(super().worktree())

    def script_answer(self, run: Any, answer: str) -> None:
        from compat.gemini.scripted_model import text

        self.rig().model.script.add(text(answer))

    def begin_slow_turn(self, run: Any, *, seconds: float = 20.0) -> None:
        from compat.gemini.scripted_model import slow_text, when

        model = self.rig().model
        model.script.add(when(SLOW_TOKEN, slow_text(max(4, int(seconds / 0.5)), 0.5)))
        run.provider.reply(run.handle, f"{SLOW_TOKEN} stream please")
        model.wait_streaming(min_deltas=2, timeout=20)

    @classmethod
    def transcripts(cls, tmp_path: Path) -> list[Path]:
        from compat.gemini.home import FIXTURES_ROOT

        return sorted(FIXTURES_ROOT.glob("*/*.jsonl"))

    def stop(self) -> None:
        super().stop()
        if self._rig is not None:
            self._rig.close()


DRIVER = GeminiDriver
