"""The argv and environment Claude Code's TUI starts with, for an untrusted and a trusted
repository (COMPAT-seeding §8). The live proof that the CLI then loads none of an untrusted
repository's settings is compat/claude_code/tests/test_live_repository_trust.py; this one is the
fast guard on what lab asks of it."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from providers.claude_code import ClaudeCodeProvider
from providers.schema import ProjectServers, RunHandle, WorkspaceChoices
from providers.tmux import Tmux

pytestmark = pytest.mark.django_db


@pytest.fixture
def started(monkeypatch):
    """What spawn hands tmux: argv and env of each session, nothing started."""
    seen: list[dict[str, object]] = []
    monkeypatch.setattr(Tmux, "new_session", lambda self, name, **kw: seen.append(kw) or 1)
    return seen


def _spawn(worktree: Path, tmp_path: Path, *, trusted: bool) -> None:
    run = RunHandle(
        run_id=1,
        worktree=str(worktree),
        tmux_socket="unused",
        tmux_session="unused",
        spool_dir=str(tmp_path / "spool"),
        trusted=trusted,
        choices=WorkspaceChoices(attribution=False, project_servers=ProjectServers.APPROVE),
    )
    ClaudeCodeProvider().spawn(run, {})


def _inline(argv: list[str]) -> dict[str, object]:
    return orjson.loads(argv[argv.index("--settings") + 1])


def test_an_untrusted_run_loads_only_the_users_settings_and_no_project_server(started, tmp_path):
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".mcp.json").write_text(json.dumps({"mcpServers": {"probe": {"command": "x"}, "b": {"url": "y"}}}))
    _spawn(wt, tmp_path, trusted=False)
    [session] = started
    argv, env = session["argv"], session["env"]
    assert argv[argv.index("--setting-sources") + 1] == "user"
    assert argv[argv.index("--add-dir") + 1] == str(wt.resolve())  # its CLAUDE.md still read
    inline = _inline(argv)
    # Approved on the form, still off: an untrusted repository's servers never start.
    assert inline["enableAllProjectMcpServers"] is False
    assert inline["disabledMcpjsonServers"] == ["b", "probe"]
    assert "attribution" in inline  # the operator's choice, which the local settings would carry
    assert env["CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD"] == "1"


def test_a_trusted_run_loads_the_repositorys_settings(started, tmp_path):
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".mcp.json").write_text(json.dumps({"mcpServers": {"probe": {"command": "x"}}}))
    _spawn(wt, tmp_path, trusted=True)
    [session] = started
    argv = session["argv"]
    assert "--setting-sources" not in argv and "--add-dir" not in argv
    assert "disabledMcpjsonServers" not in _inline(argv)
