"""The commit guard against real git: what an agent commits through it, what the operator's
own git (without lab's environment) still does, and the repository's own hooks still running."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from seeding import commit_guard
from seeding.tests.conftest import git

SEEDED = ("CLAUDE.md", ".claude/skills/**", ".claude/settings.local.json")
SCRUB = (r"^Co-Authored-By: Claude.*$", r"^🤖 Generated with \[Claude Code\].*$")
ATTRIBUTED = (
    "Fix the parser\n\nKeeps the partial line.\n\n"
    "🤖 Generated with [Claude Code](https://claude.com/claude-code)\n\n"
    "Co-Authored-By: Claude Opus 5.5 <noreply@anthropic.com>\n"
)
IDENT = {
    "GIT_AUTHOR_NAME": "agent",
    "GIT_AUTHOR_EMAIL": "agent@example.invalid",
    "GIT_COMMITTER_NAME": "agent",
    "GIT_COMMITTER_EMAIL": "agent@example.invalid",
}


def agent_env(worktree: Path, hooks: Path, *, scrub: bool = True, base: dict[str, str] | None = None):
    extra = commit_guard.guard_env(
        worktree=worktree,
        hooks_dir=hooks,
        seeded_paths=SEEDED,
        scrub_patterns=SCRUB,
        scrub=scrub,
        base_env=base or {},
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**clean, **IDENT, **(base or {}), **extra}


def run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)


def last_message(cwd: Path) -> str:
    return git(cwd, "log", "-1", "--format=%B")


@pytest.fixture
def hooks(tmp_path):
    return commit_guard.install_hooks(tmp_path / "git-hooks")


def test_an_agents_commit_loses_the_attribution_lines_and_nothing_else(linked, hooks):
    env = agent_env(linked, hooks)
    (linked / "a.txt").write_text("a\n")
    run(linked, env, "add", "a.txt")
    cp = run(linked, env, "commit", "-m", ATTRIBUTED)
    assert cp.returncode == 0, cp.stderr
    assert last_message(linked) == "Fix the parser\n\nKeeps the partial line.\n\n"


def test_with_attribution_on_the_message_is_untouched(linked, hooks):
    env = agent_env(linked, hooks, scrub=False)
    (linked / "a.txt").write_text("a\n")
    run(linked, env, "add", "a.txt")
    assert run(linked, env, "commit", "-m", ATTRIBUTED).returncode == 0
    assert last_message(linked) == ATTRIBUTED + "\n"


def test_the_operators_own_commits_are_not_guarded(linked):
    (linked / "CLAUDE.md").write_text("mine\n")
    git(linked, "add", "-f", "CLAUDE.md")
    git(linked, "commit", "-q", "-m", ATTRIBUTED)
    assert last_message(linked) == ATTRIBUTED + "\n"


@pytest.mark.parametrize(
    "path", ["CLAUDE.md", ".claude/skills/review/SKILL.md", ".claude/settings.local.json"]
)
def test_a_seeded_file_never_reaches_an_agents_commit(linked, hooks, path):
    env = agent_env(linked, hooks)
    (linked / path).parent.mkdir(parents=True, exist_ok=True)
    (linked / path).write_text("seeded\n")
    (linked / "work.txt").write_text("work\n")
    run(linked, env, "add", "-f", path, "work.txt")
    head = git(linked, "rev-parse", "HEAD")
    cp = run(linked, env, "commit", "-m", "work")
    assert cp.returncode != 0
    assert path in cp.stderr and "must not be committed" in cp.stderr
    assert git(linked, "rev-parse", "HEAD") == head
    # The way out the message names works: unstage it, and the rest commits.
    run(linked, env, "restore", "--staged", "--", path)
    assert run(linked, env, "commit", "-m", "work").returncode == 0
    assert git(linked, "show", "--name-only", "--format=", "HEAD") == "work.txt\n"


def test_a_tracked_file_at_a_seeded_path_commits_as_usual(repo, linked, hooks):
    # The repository's own CLAUDE.md: lab never seeds over it, and the agent may edit it.
    (linked / "CLAUDE.md").write_text("the project's own\n")
    git(linked, "add", "-f", "CLAUDE.md")
    git(linked, "commit", "-q", "-m", "project instructions")
    env = agent_env(linked, hooks)
    (linked / "CLAUDE.md").write_text("the project's own, edited\n")
    run(linked, env, "add", "CLAUDE.md")
    cp = run(linked, env, "commit", "-m", "edit instructions")
    assert cp.returncode == 0, cp.stderr


def test_the_repositorys_own_hooks_still_run(repo, linked, hooks, tmp_path):
    log = tmp_path / "hook.log"
    for name, body in (
        ("pre-commit", f'echo pre-commit >> {log}; [ ! -e "$(git rev-parse --show-toplevel)/block" ]'),
        ("commit-msg", f'echo "commit-msg $(head -1 "$1")" >> {log}'),
        ("post-commit", f"echo post-commit >> {log}"),
    ):
        hook = repo / ".git" / "hooks" / name
        hook.write_text(f"#!/bin/sh\n{body}\n")
        hook.chmod(0o755)
    env = agent_env(linked, hooks)
    (linked / "a.txt").write_text("a\n")
    run(linked, env, "add", "a.txt")
    assert run(linked, env, "commit", "-m", ATTRIBUTED).returncode == 0
    assert log.read_text() == "pre-commit\ncommit-msg Fix the parser\npost-commit\n"
    # The repository's pre-commit can still refuse a commit.
    (linked / "block").write_text("")
    (linked / "b.txt").write_text("b\n")
    run(linked, env, "add", "b.txt")
    assert run(linked, env, "commit", "-m", "blocked").returncode != 0


def test_a_core_hooks_path_of_the_repository_is_chained(repo, linked, hooks, tmp_path):
    husky = repo / ".husky"
    husky.mkdir()
    (husky / "pre-commit").write_text("#!/bin/sh\necho 'project check failed' >&2; exit 1\n")
    (husky / "pre-commit").chmod(0o755)
    git(repo, "config", "core.hooksPath", str(husky))
    env = agent_env(linked, hooks)
    assert env[commit_guard.CHAIN] == str(husky)
    (linked / "a.txt").write_text("a\n")
    run(linked, env, "add", "a.txt")
    cp = run(linked, env, "commit", "-m", "x")
    assert cp.returncode != 0 and "project check failed" in cp.stderr


def test_the_operators_own_git_config_entries_are_kept(linked, hooks):
    base = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.signingkey", "GIT_CONFIG_VALUE_0": "k"}
    env = agent_env(linked, hooks, base=base)
    assert env["GIT_CONFIG_COUNT"] == "2"
    assert run(linked, env, "config", "user.signingkey").stdout == "k\n"
    assert run(linked, env, "config", "core.hooksPath").stdout == f"{hooks}\n"


def test_a_bad_scrub_pattern_fails_at_spawn_not_in_a_commit(linked, hooks):
    with pytest.raises(commit_guard.GuardError, match="scrub pattern"):
        commit_guard.guard_env(
            worktree=linked, hooks_dir=hooks, seeded_paths=(), scrub_patterns=("(",), scrub=True, base_env={}
        )


def test_installing_twice_rewrites_nothing(tmp_path):
    hooks = commit_guard.install_hooks(tmp_path / "h")
    stamps = {p.name: p.stat().st_mtime_ns for p in hooks.iterdir()}
    commit_guard.install_hooks(tmp_path / "h")
    assert {p.name: p.stat().st_mtime_ns for p in hooks.iterdir()} == stamps
    assert {"pre-commit", "commit-msg", "reference-transaction"} <= set(stamps)


@pytest.mark.parametrize(
    ("message", "scrubbed"),
    [
        (ATTRIBUTED, "Fix the parser\n\nKeeps the partial line.\n"),
        ("Only a subject\n", "Only a subject\n"),
        ("Subject\n\nCo-Authored-By: Claude <noreply@anthropic.com>", "Subject\n"),
        (
            "Subject\n\nCo-Authored-By: Ada <ada@example.com>\n",
            "Subject\n\nCo-Authored-By: Ada <ada@example.com>\n",
        ),
    ],
)
def test_scrub_message(message, scrubbed):
    assert commit_guard.scrub_message(message, SCRUB) == scrubbed
