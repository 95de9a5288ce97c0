"""Pytest fixtures for the Codex probes: a scripted Responses API model, a private CODEX_HOME
with trust and hooks pre-seeded, and the real TUI in tmux. Named ``codex_*`` so they never
shadow another provider's fixtures."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from compat.codex.home import HOOK_EVENTS, prepare_home
from compat.codex.live import CodexTUI, HookSpool
from compat.codex.scripted_model import Script, ScriptedModel
from compat.live import make_worktree, tui_factory

# The name codex's tests import the shared worktree maker by.
make_git_worktree = make_worktree


@pytest.fixture
def codex_model(tmp_path: Path) -> Iterator[ScriptedModel]:
    """The scripted Responses API on a free loopback port; add rules with ``.script.add(...)``."""
    with ScriptedModel(Script(), log_path=str(tmp_path / "requests.jsonl")) as m:
        yield m


@dataclass
class CodexHome:
    home: Path
    worktree: Path
    env: dict[str, str]
    spool: HookSpool

    @property
    def codex_home(self) -> Path:
        return Path(self.env["CODEX_HOME"])


@pytest.fixture
def codex_home(tmp_path: Path, codex_model: ScriptedModel) -> CodexHome:
    """HOME + CODEX_HOME prepared for an offline start, every lifecycle hook spooling its payload,
    and a fresh git worktree."""
    wt = make_worktree(tmp_path / "wt")
    spool = HookSpool(tmp_path / "spool", HOOK_EVENTS)
    key = f"sk-scripted-{uuid.uuid4().hex}"
    env = prepare_home(tmp_path / "home", wt, codex_model.url, api_key=key, hooks=spool.hooks())
    return CodexHome(tmp_path / "home", wt, env, spool)


@pytest.fixture
def codex_tui(codex_home: CodexHome) -> Iterator[Callable[..., CodexTUI]]:
    """Factory: ``tui = codex_tui()`` -> started, composer on screen. Every tmux server it
    started is killed at teardown, pass or fail."""
    with tui_factory(lambda: CodexTUI(codex_home.env, codex_home.worktree)) as start:
        yield start
