"""Codex's conformance driver: the real pinned binary against the scripted Responses API model, in
a private HOME + CODEX_HOME, through the production adapter (docs/providers.md, "Join the
conformance suite").

The suite finds it by convention (compat.conformance.load_driver reads DRIVER here). It starts
what it needs itself, lazily, and stops it at teardown: it requests no fixture of compat's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compat.conformance import Driver

SLOW_TOKEN = "LAB-CONFORMANCE-SLOW"


class CodexDriver(Driver):
    provider_id = "codex"
    dotted = "providers.codex.CodexProvider"

    _rig: Any = None

    def rig(self) -> Any:
        if self._rig is None:
            from compat.codex.adapter_harness import CodexAdapterRig

            settings = self.request.getfixturevalue("settings")
            self._rig = CodexAdapterRig(self.tmp_path / "codex", settings)
        return self._rig

    def configure(self, *, live: bool) -> None:
        settings = self.request.getfixturevalue("settings")
        if live:
            self.rig()  # points LAB_AGENT_HOME/ENV/BIN_DIR at the private home and the model
        else:
            # Declaration tests: an empty private home, never the operator's own.
            (self.tmp_path / "home").mkdir(exist_ok=True)
            settings.LAB_AGENT_HOME = str(self.tmp_path / "home")
            settings.LAB_AGENT_ENV = {}

    def worktree(self, *, live: bool = False) -> Path:
        if live:
            return Path(self.rig().worktree)
        return Path(super().worktree())

    def script_answer(self, run: Any, answer: str) -> None:
        from compat.codex.scripted_model import text

        self.rig().model.script.add(text(answer))

    def begin_slow_turn(self, run: Any, *, seconds: float = 20.0) -> None:
        from compat.codex.scripted_model import slow_text, when

        model = self.rig().model
        model.script.add(when(SLOW_TOKEN, slow_text(max(4, int(seconds / 0.5)), 0.5)))
        run.provider.reply(run.handle, f"{SLOW_TOKEN} stream please")
        model.wait_streaming(min_deltas=2, timeout=20)

    @classmethod
    def transcripts(cls, tmp_path: Path) -> list[Path]:
        from compat.codex.home import FIXTURES_ROOT

        captured = sorted(FIXTURES_ROOT.glob("*/*.jsonl"))
        data = Path(__file__).parents[2] / "providers" / "codex" / "tests" / "data"
        synthesized = sorted(data.glob("*.jsonl"))
        return [*captured, *synthesized]

    def stop(self) -> None:
        super().stop()
        if self._rig is not None:
            self._rig.close()


DRIVER = CodexDriver
