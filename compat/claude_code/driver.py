"""Claude Code's conformance driver: the real pinned binary against the scripted model, in a
private HOME (compat/conformance.py states what a driver is)."""

from __future__ import annotations

from pathlib import Path

from compat.claude_code.home import ClaudeHome, fixture_paths, private_home
from compat.claude_code.scripted_model import Script, ScriptedModel, slow_text, text, when
from compat.conformance import Driver, LiveRun


class ClaudeCodeDriver(Driver):
    provider_id = "claude-code"

    _model: ScriptedModel | None = None
    _home: ClaudeHome | None = None

    @property
    def model(self) -> ScriptedModel:
        # Started on first use, so declaration-only tests never start a server.
        if self._model is None:
            self._model = ScriptedModel(Script(), log_path=str(self.tmp_path / "requests.jsonl")).start()
        return self._model

    @property
    def home(self) -> ClaudeHome:
        if self._home is None:
            self._home = private_home(self.tmp_path / "claude", self.model.url)
        return self._home

    def configure(self, *, live: bool) -> None:
        # As a deployment would: LAB_AGENT_HOME for the private HOME, LAB_AGENT_ENV for the
        # scripted model's URL and key. Declaration tests get an empty private HOME, so the
        # operator's own ~/.claude never leaks into a result.
        django_settings = self.request.getfixturevalue("settings")
        if live:
            django_settings.LAB_AGENT_HOME = str(self.home.home)
            django_settings.LAB_AGENT_ENV = {
                k: v for k, v in self.home.env.items() if k not in ("HOME", "PATH", "TERM", "LANG")
            }
        else:
            (self.tmp_path / "home").mkdir(exist_ok=True)
            django_settings.LAB_AGENT_HOME = str(self.tmp_path / "home")

    def worktree(self, *, live: bool = False) -> Path:
        if live:
            return self.home.worktree
        return super().worktree()

    def populate_worktree(self, worktree: Path) -> None:
        # A project command and a skill (compat §10), and a project command named like the
        # builtin clear: the catalog must still keep names unique and one CLEAR row.
        commands = worktree / ".claude" / "commands"
        commands.mkdir(parents=True, exist_ok=True)
        (commands / "deploy.md").write_text("---\ndescription: Deploy the branch\n---\nDeploy $ARGUMENTS\n")
        (commands / "clear.md").write_text("Clear the build cache.\n")
        skill = worktree / ".claude" / "skills" / "review"
        skill.mkdir(parents=True, exist_ok=True)
        (skill / "SKILL.md").write_text("---\nname: review\ndescription: Review the diff\n---\nReview.\n")

    def script_answer(self, run: LiveRun, answer: str) -> None:
        self.model.script.add(text(answer))

    def begin_slow_turn(self, run: LiveRun, *, seconds: float = 20.0) -> None:
        self.model.script.add(when("SLOW", slow_text(max(4, int(seconds / 0.5)), 0.5)))
        run.provider.reply(run.handle, "SLOW stream please")
        self.model.wait_streaming(min_deltas=2, timeout=20)

    @classmethod
    def transcripts(cls, tmp_path: Path) -> list[Path]:
        # The captured fixtures of every version: a run started under an older pin stays readable.
        return fixture_paths()

    def stop(self) -> None:
        try:
            super().stop()  # the CLIs first: they talk to the model
        finally:
            if self._model is not None:
                self._model.stop()


DRIVER = ClaudeCodeDriver
