"""Fixtures every provider's compat tests share (pytest applies this file to each compat/<pkg>/).

A provider's own fixtures (its scripted model, its private HOME) live in compat/<pkg>/conftest.py,
so two providers may use the same fixture names without meeting.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compat.live import make_worktree


@pytest.fixture
def git_worktree(tmp_path: Path) -> Path:
    """A fresh git repository with one commit, for a CLI to start in."""
    return make_worktree(tmp_path / "git-worktree")
