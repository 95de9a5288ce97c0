"""Real git repositories in temp dirs for the seeding tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from seeding.worktrees import worktree_create


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "README.md").write_text("hi\n")
    git(r, "add", "README.md")
    git(r, "commit", "-q", "-m", "one")
    # A known starting point: git's template exclude differs between installs.
    (r / ".git" / "info").mkdir(exist_ok=True)
    (r / ".git" / "info" / "exclude").write_text("# existing\n")
    return r


@pytest.fixture
def linked(repo: Path, tmp_path: Path) -> Path:
    """A linked worktree of `repo`, as a run gets one."""
    return worktree_create(repository=repo, branch="run-1", path=tmp_path / "wt")


@pytest.fixture
def pool(tmp_path: Path) -> Path:
    p = tmp_path / "pool"
    (p / "review" / "scripts").mkdir(parents=True)
    (p / "review" / "SKILL.md").write_text(
        "---\nname: review\ndescription: Review a diff.\n---\n\nRead the diff.\n"
    )
    script = p / "review" / "scripts" / "check.sh"
    script.write_text("#!/bin/sh\necho ok\n")
    script.chmod(0o755)
    return p


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root except git's own: relpath -> (bytes, permission bits)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/") or not path.is_file():
            continue
        out[rel] = (path.read_bytes(), path.stat().st_mode & 0o777)
    return out


def status(worktree: Path) -> str:
    return git(worktree, "status", "--porcelain", "--untracked-files=all")
