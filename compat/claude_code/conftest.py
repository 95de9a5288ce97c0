"""Pytest fixtures for live tests against the real Claude Code TUI (offline, scripted model)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat.adapter import AdapterRun
from compat.claude_code.adapter import spawn_adapter_run
from compat.claude_code.home import ClaudeHome, private_home
from compat.claude_code.live import ClaudeTUI
from compat.claude_code.scripted_model import Script, ScriptedModel
from compat.live import tui_factory
from providers.tmux import Tmux


@pytest.fixture
def scripted_model(tmp_path: Path) -> Iterator[ScriptedModel]:
    """A scripted model on a free loopback port; set ``scripted_model.script`` or ``.script.add(...)``."""
    with ScriptedModel(Script(), log_path=str(tmp_path / "requests.jsonl")) as m:
        yield m


@pytest.fixture
def claude_home(tmp_path: Path, scripted_model: ScriptedModel) -> ClaudeHome:
    """A private HOME prepared for offline start + a fresh worktree (git repo, one commit)."""
    return private_home(tmp_path, scripted_model.url)


@pytest.fixture
def live_tui(claude_home: ClaudeHome) -> Iterator[Any]:
    """Factory: ``tui = live_tui("--permission-mode", "manual")`` -> started + ready ClaudeTUI.

    Every tmux server started through it is killed at teardown, pass or fail.
    """
    with tui_factory(lambda: ClaudeTUI(claude_home.env, claude_home.worktree)) as start:
        yield start


@pytest.fixture
def adapter_settings(settings: Any, claude_home: ClaudeHome) -> Any:
    """Point the adapter at the private HOME and the scripted model, as a deployment would
    through LAB_AGENT_HOME and LAB_AGENT_ENV."""
    env = {k: v for k, v in claude_home.env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
    settings.LAB_AGENT_HOME = str(claude_home.home)
    settings.LAB_AGENT_ENV = env
    return settings


@pytest.fixture
def live_run(adapter_settings: Any, claude_home: ClaudeHome, tmp_path: Path) -> Iterator[AdapterRun]:
    """The real TUI started through the production adapter (manual permission mode)."""
    run = spawn_adapter_run(tmp_path, claude_home.worktree)
    yield run
    Tmux(run.handle.tmux_socket).kill_server()


@pytest.fixture
def trusted_manual_run(
    adapter_settings: Any, claude_home: ClaudeHome, tmp_path: Path
) -> Iterator[AdapterRun]:
    """manual_run in a repository the operator trusts: its settings load, the rules "don't ask
    again" saves among them (COMPAT-seeding §8)."""
    run = spawn_adapter_run(tmp_path, claude_home.worktree, {"permission_mode": "default"}, trusted=True)
    yield run
    Tmux(run.handle.tmux_socket).kill_server()


@pytest.fixture
def manual_run(adapter_settings: Any, claude_home: ClaudeHome, tmp_path: Path) -> Iterator[AdapterRun]:
    """The real TUI in "ask before each action" mode: tool permissions are prompted."""
    run = spawn_adapter_run(tmp_path, claude_home.worktree, {"permission_mode": "default"})
    yield run
    Tmux(run.handle.tmux_socket).kill_server()
