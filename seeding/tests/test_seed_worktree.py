"""manage.py seed_worktree: prints each file it writes or would write; clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from seeding.tests.conftest import git


@pytest.fixture(autouse=True)
def agent_home(settings, tmp_path):
    settings.LAB_AGENT_HOME = str(tmp_path / "agent-home")
    settings.DATA_DIR = tmp_path / "data"
    return tmp_path / "agent-home"


@pytest.fixture
def context(tmp_path):
    path = tmp_path / "context.md"
    path.write_text("# Context\n")
    return path


def run(*args):
    out = StringIO()
    call_command("seed_worktree", *map(str, args), stdout=out)
    return out.getvalue()


def test_it_prints_each_file_it_writes(linked, context, pool, agent_home):
    out = run(linked, "--provider", "claude-code", "--context-file", context, "--skills", pool)
    assert f"wrote       {linked / 'CLAUDE.md'}\n" in out
    assert f"wrote       {linked / '.claude/skills/review/SKILL.md'}\n" in out
    assert f"wrote       {agent_home / '.claude.json'}" in out
    assert (linked / "CLAUDE.md").read_text() == "# Context\n"


def test_a_second_run_reports_everything_unchanged(linked, context):
    run(linked, "--provider", "claude-code", "--context-file", context)
    out = run(linked, "--provider", "claude-code", "--context-file", context)
    assert "wrote" not in out
    assert f"unchanged   {linked / 'CLAUDE.md'}" in out
    assert "0 file(s) written" in out


def test_dry_run_prints_what_it_would_write(linked, context, agent_home):
    out = run(linked, "--provider", "claude-code", "--context-file", context, "--dry-run")
    assert f"would write {linked / 'CLAUDE.md'}" in out
    assert "were not applied" in out
    assert not (linked / "CLAUDE.md").exists()
    assert not (agent_home / ".claude.json").exists()


def test_it_skips_a_tracked_context_file_and_says_why(linked, context):
    from seeding.tests.conftest import git

    (linked / "CLAUDE.md").write_text("repo's own\n")
    git(linked, "add", "CLAUDE.md")
    git(linked, "commit", "-q", "-m", "c")
    out = run(linked, "--provider", "claude-code", "--context-file", context)
    assert f"skipped     {linked / 'CLAUDE.md'}  (tracked by the repository" in out
    assert (linked / "CLAUDE.md").read_text() == "repo's own\n"


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("not-a-dir", "is not a directory"),
        ("not-git", "is not the root of a git worktree"),
        ("unknown-provider", "No provider 'nope'"),
        ("missing-context", "does not exist"),
        ("missing-skills", "does not exist"),
    ],
)
def test_bad_input_is_a_clear_command_error(linked, tmp_path, case, message):
    plain = tmp_path / "plain"
    plain.mkdir()
    args = {
        "not-a-dir": [tmp_path / "nope", "--provider", "claude-code"],
        "not-git": [plain, "--provider", "claude-code"],
        "unknown-provider": [linked, "--provider", "nope"],
        "missing-context": [linked, "--provider", "claude-code", "--context-file", tmp_path / "no.md"],
        "missing-skills": [linked, "--provider", "claude-code", "--skills", tmp_path / "no-skills"],
    }[case]
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert not (linked / "CLAUDE.md").exists()


def test_bad_input_exits_non_zero_from_the_shell(tmp_path, settings):
    cp = subprocess.run(
        [sys.executable, "manage.py", "seed_worktree", str(tmp_path / "nope"), "--provider", "claude-code"],
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
    )
    assert cp.returncode == 1
    assert "is not a directory" in cp.stderr


def test_the_operators_choices_come_from_flags_then_settings(linked, settings):
    (linked / ".mcp.json").write_text('{"mcpServers": {"search": {"command": "true"}}}')
    local = linked / ".claude" / "settings.local.json"
    settings.LAB_SEED_ATTRIBUTION = False
    out = run(linked, "--provider", "claude-code")
    assert f"wrote       {local}  (Claude Code grants and settings)" in out
    assert json.loads(local.read_text()) == {
        "attribution": {"commit": "", "pr": ""},
        "disabledMcpjsonServers": ["search"],
    }
    run(linked, "--provider", "claude-code", "--attribution", "--project-mcp", "approve")
    assert json.loads(local.read_text()) == {"enabledMcpjsonServers": ["search"]}
    # The seeded settings file is excluded: git status stays clean.
    assert git(linked, "status", "--porcelain", "--untracked-files=all") == "?? .mcp.json\n"


def test_an_unknown_mcp_choice_is_a_usage_error(linked):
    with pytest.raises(CommandError, match="invalid choice"):
        run(linked, "--provider", "claude-code", "--project-mcp", "maybe")
