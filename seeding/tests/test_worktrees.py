"""seeding.worktrees against real git in temp dirs (no database)."""

from __future__ import annotations

import os
import subprocess

import pytest

from seeding import worktrees
from seeding.tests.conftest import git
from seeding.worktrees import (
    BranchExists,
    InvalidName,
    NotAGitRepository,
    PathExists,
    UncommittedChanges,
    UnknownRef,
    WorktreeError,
)


def test_it_detects_git_repositories(repo, tmp_path):
    assert worktrees.is_git_repository(repo)
    assert not worktrees.is_git_repository(tmp_path / "nope")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert not worktrees.is_git_repository(plain)


@pytest.mark.parametrize("name", ["feature/x", "a;b$(touch${IFS}pwned)", "x|y&z`id`", "ünïcode"])
def test_it_accepts_names_git_accepts(name):
    assert worktrees.validate_branch(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        "-x",
        "--force",
        "a b",
        "a..b",
        "a~1",
        "x:y",
        "x?",
        "x*",
        "x[",
        "a@{1}",
        "x.lock",
        "x/",
        "HEAD",
        "tab\tname",
        "new\nline",
    ],
)
def test_it_refuses_bad_names(name):
    with pytest.raises(InvalidName):
        worktrees.validate_branch(name)


def test_invalid_name_is_a_value_error():
    assert issubclass(InvalidName, ValueError)


def test_it_creates_a_worktree_on_a_new_branch_from_head(repo, tmp_path):
    head = git(repo, "rev-parse", "HEAD").strip()
    wt = worktrees.worktree_create(repository=repo, branch="run-1", path=tmp_path / "wt1")
    assert wt == (tmp_path / "wt1").resolve()
    assert (wt / "README.md").read_text() == "hi\n"
    assert git(wt, "rev-parse", "--abbrev-ref", "HEAD").strip() == "run-1"
    assert git(wt, "rev-parse", "HEAD").strip() == head


def test_it_branches_from_a_chosen_base_ref(repo, tmp_path):
    first = git(repo, "rev-parse", "HEAD").strip()
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "two")
    wt = worktrees.worktree_create(repository=repo, branch="old", path=tmp_path / "wt", base_ref=first)
    assert git(wt, "rev-parse", "HEAD").strip() == first
    assert not (wt / "b.txt").exists()


def test_shell_metacharacters_are_just_bytes(repo, tmp_path):
    name = "a;b$(touch${IFS}pwned)`touch${IFS}pwned2`"
    wt = worktrees.worktree_create(repository=repo, branch=name, path=tmp_path / "w;$(x)")
    assert git(wt, "rev-parse", "--abbrev-ref", "HEAD").strip() == name
    assert not list(tmp_path.rglob("pwned*"))
    assert worktrees.worktree_find(repo, name) == wt


def test_a_base_ref_that_looks_like_an_option_is_not_one(repo, tmp_path):
    with pytest.raises(UnknownRef):
        worktrees.worktree_create(repository=repo, branch="x", path=tmp_path / "wt", base_ref="--orphan")
    assert not (tmp_path / "wt").exists()


def test_it_refuses_a_leading_dash_branch(repo, tmp_path):
    with pytest.raises(InvalidName, match="start with '-'"):
        worktrees.worktree_create(repository=repo, branch="-b", path=tmp_path / "wt")


def test_it_refuses_a_non_git_path(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotAGitRepository, match="not a git repository"):
        worktrees.worktree_create(repository=plain, branch="x", path=tmp_path / "wt")


def test_it_refuses_an_existing_branch(repo, tmp_path):
    git(repo, "branch", "taken")
    with pytest.raises(BranchExists, match="already exists"):
        worktrees.worktree_create(repository=repo, branch="taken", path=tmp_path / "wt")


def test_it_refuses_an_existing_path(repo, tmp_path):
    (tmp_path / "wt").mkdir()
    with pytest.raises(PathExists):
        worktrees.worktree_create(repository=repo, branch="x", path=tmp_path / "wt")


def test_it_refuses_an_unknown_base_ref(repo, tmp_path):
    with pytest.raises(UnknownRef, match="not a commit"):
        worktrees.worktree_create(repository=repo, branch="x", path=tmp_path / "wt", base_ref="nope")


def test_it_explains_an_empty_repository(tmp_path):
    r = tmp_path / "empty"
    r.mkdir()
    git(r, "init", "-q")
    with pytest.raises(UnknownRef, match="no commits"):
        worktrees.worktree_create(repository=r, branch="x", path=tmp_path / "wt")


def test_it_finds_an_existing_worktree_to_reuse(repo, tmp_path):
    wt = worktrees.worktree_create(repository=repo, branch="run-2", path=tmp_path / "wt2")
    assert worktrees.worktree_find(repo, "run-2") == wt
    assert worktrees.worktree_find(repo, "main") == repo.resolve()
    assert worktrees.worktree_find(repo, "other") is None


def test_find_skips_a_worktree_whose_directory_is_gone(repo, tmp_path):
    wt = worktrees.worktree_create(repository=repo, branch="gone", path=tmp_path / "gone")
    subprocess.run(["rm", "-rf", str(wt)], check=True)
    assert worktrees.worktree_find(repo, "gone") is None


def test_it_removes_a_clean_worktree_and_keeps_the_branch(repo, tmp_path):
    wt = worktrees.worktree_create(repository=repo, branch="run-3", path=tmp_path / "wt3")
    worktrees.worktree_remove(repository=repo, path=wt)
    assert not wt.exists()
    assert worktrees.branch_exists(repo, "run-3")


@pytest.mark.parametrize("dirty", ["modified", "untracked", "staged"])
def test_it_refuses_to_remove_uncommitted_work(repo, tmp_path, dirty):
    wt = worktrees.worktree_create(repository=repo, branch="run-4", path=tmp_path / "wt4")
    if dirty == "modified":
        (wt / "README.md").write_text("changed\n")
    elif dirty == "untracked":
        (wt / "new.txt").write_text("new\n")
    else:
        (wt / "s.txt").write_text("s\n")
        git(wt, "add", "s.txt")
    with pytest.raises(UncommittedChanges, match="uncommitted"):
        worktrees.worktree_remove(repository=repo, path=wt)
    assert wt.exists()
    worktrees.worktree_remove(repository=repo, path=wt, force=True)
    assert not wt.exists()


def test_ignored_files_do_not_block_removal(repo, tmp_path):
    wt = worktrees.worktree_create(repository=repo, branch="run-5", path=tmp_path / "wt5")
    worktrees.git_path(wt, "info/exclude").write_text("/seeded.md\n")
    (wt / "seeded.md").write_text("lab's\n")
    worktrees.worktree_remove(repository=repo, path=wt)
    assert not wt.exists()


def test_it_never_removes_the_main_worktree_or_a_stranger(repo, tmp_path):
    with pytest.raises(WorktreeError, match="main worktree"):
        worktrees.worktree_remove(repository=repo, path=repo, force=True)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(WorktreeError, match="not a worktree"):
        worktrees.worktree_remove(repository=repo, path=other, force=True)
    assert repo.exists() and other.exists()


def test_git_path_puts_exclude_in_the_common_dir(repo, tmp_path):
    wt = worktrees.worktree_create(repository=repo, branch="run-6", path=tmp_path / "wt6")
    assert worktrees.git_path(wt, "info/exclude") == (repo / ".git" / "info" / "exclude").resolve()
    assert worktrees.toplevel(wt) == wt
    assert worktrees.toplevel(wt / "..") is None or worktrees.toplevel(wt / "..") != wt


def test_creating_a_worktree_runs_none_of_a_hostile_repositorys_programs(tmp_path):
    # post-checkout and reference-transaction hooks, a smudge filter, an fsmonitor hook.
    from tests.factories import hostile_repository

    repo, marks = hostile_repository(tmp_path)
    wt = worktrees.worktree_create(repository=repo, branch="lab/run-1", path=tmp_path / "wt")
    assert (wt / "a.txt").read_text() == "alpha\n"
    assert worktrees.uncommitted_changes(wt) == []
    assert sorted(os.listdir(marks)) == []
