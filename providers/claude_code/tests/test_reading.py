"""Claude Code's transcripts as its adapter reads them: a background agent's own transcript is
found only inside the session's own transcript directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from providers.claude_code.provider import ClaudeCodeProvider
from providers.claude_code.tool_results import ToolResults
from providers.schema import RunHandle
from providers.testing import returns_within

SESSION = "0b0e6f5c-8f2e-4c57-9a43-2d7f1e8c9a10"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "projects" / "-work-repo"
    project.mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_text("")
    return project


def _side(project: Path, agent: str) -> str:
    handle = RunHandle(
        run_id=1,
        worktree="/nonexistent",
        tmux_socket="lab-test",
        tmux_session="lab-1",
        transcript_path=str(project / f"{SESSION}.jsonl"),
    )
    return ClaudeCodeProvider().side_transcript(handle, agent)


def test_an_agent_s_transcript_beside_the_session_is_found(project: Path) -> None:
    (project / SESSION / "subagents").mkdir(parents=True)
    (project / SESSION / "subagents" / "agent-a1.jsonl").write_text("")
    assert _side(project, "a1") == str(project / SESSION / "subagents" / "agent-a1.jsonl")
    assert _side(project, "a2") == ""


def test_a_symlinked_subagents_folder_is_not_followed_out_of_the_tree(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "agent-a1.jsonl").write_text('{"secret": 1}\n')
    (project / SESSION).mkdir()
    os.symlink(outside, project / SESSION / "subagents")
    assert _side(project, "a1") == ""


def test_a_symlinked_session_folder_is_not_followed_either(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    (outside / "subagents").mkdir(parents=True)
    (outside / "subagents" / "agent-a1.jsonl").write_text('{"secret": 1}\n')
    os.symlink(outside, project / SESSION)
    assert _side(project, "a1") == ""


def test_the_tool_results_scan_skips_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "t.jsonl")
    assert returns_within(lambda: ToolResults().among(str(tmp_path / "t.jsonl"), ["toolu_1"])) == frozenset()
