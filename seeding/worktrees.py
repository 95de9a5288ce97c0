"""Git worktrees, for runs and the seeder: create one per run, find one to reuse, remove one safely.

Pure functions over `git` argv lists (never a shell): user-supplied names and refs go after
`--end-of-options`, so a name that looks like an option is data, not a flag. No Django.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from providers import safegit

GIT_TIMEOUT_S = 60.0


class WorktreeError(Exception):
    """Base class: the message is safe to show the operator. `field` names the new-run form's
    field the error is about (shown next to it), None for the form as a whole."""

    field: str | None = None

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        if field is not None:
            self.field = field


class InvalidName(WorktreeError, ValueError):
    """A branch name git would refuse, or one lab refuses (a leading '-', HEAD)."""

    field = "branch"


class NotAGitRepository(WorktreeError):
    field = "repository"


class BranchExists(WorktreeError):
    field = "branch"


class BranchInUse(WorktreeError):
    """The branch is checked out where lab must not run an agent: the operator's own checkout,
    or the worktree of a run that is still live."""

    field = "branch"


class PathExists(WorktreeError):
    pass


class UnknownRef(WorktreeError):
    field = "base_ref"


class UncommittedChanges(WorktreeError):
    """The worktree has changes or untracked files; removing it needs an explicit force."""


class GitFailed(WorktreeError):
    pass


def git(*args: str, cwd: Path | str) -> subprocess.CompletedProcess[str]:
    """Run `git -C cwd ARGS` through lab's safe runner (providers/safegit: the repository's
    config runs no program) without raising on git's failure; callers turn failures into typed
    errors. stdout keeps every byte of a path (surrogateescape), stderr is for reading. A git
    that outlives its bound is killed with what it started, and GitFailed says so."""
    try:
        done = safegit.run(*args, cwd=cwd, timeout=GIT_TIMEOUT_S)
    except safegit.GitTimeout as exc:
        raise GitFailed(str(exc)) from None
    return subprocess.CompletedProcess(["git", *args], done.returncode, safegit.path(done.stdout), done.err)


def _checked(*args: str, cwd: Path | str) -> str:
    cp = git(*args, cwd=cwd)
    if cp.returncode != 0:
        raise GitFailed(f"git {args[0]} failed: {cp.stderr.strip() or safegit.shown(cp.stdout.strip())}")
    return cp.stdout


def is_git_repository(path: Path | str) -> bool:
    if not Path(path).is_dir():
        return False
    return git("rev-parse", "--git-dir", cwd=path).returncode == 0


def toplevel(path: Path | str) -> Path | None:
    """The root of the work tree `path` is in (realpath), or None outside one (or in a bare repo)."""
    if not Path(path).is_dir():
        return None
    cp = git("rev-parse", "--show-toplevel", cwd=path)
    out = cp.stdout.strip()
    return Path(os.path.realpath(out)) if cp.returncode == 0 and out else None


def git_path(worktree: Path | str, name: str) -> Path:
    """`git rev-parse --git-path NAME`, absolute. Git resolves shared names (info/exclude) to the
    common dir of a linked worktree and other names to the worktree's own git dir."""
    out = _checked("rev-parse", "--path-format=absolute", "--git-path", name, cwd=worktree)
    return Path(out.strip())


def validate_branch(name: str) -> str:
    """Return `name` if git accepts it as a new branch name; raise InvalidName otherwise."""
    if not name:
        raise InvalidName("The branch name is empty.")
    if name.startswith("-"):
        raise InvalidName(f"A branch name may not start with '-': {name!r}.")
    if name == "HEAD":
        raise InvalidName("'HEAD' is not a usable branch name.")
    # The refs/heads/ form is the strict check: `--branch` would expand @{-1} against a repo.
    if git("check-ref-format", f"refs/heads/{name}", cwd="/").returncode != 0:  # needs no repo
        raise InvalidName(
            f"Not a valid branch name: {name!r} (no spaces, '..', '~^:?*[\\', '@{{', "
            "control characters, or a trailing '/', '.' or '.lock')."
        )
    return name


def _require_repository(repository: Path) -> None:
    if not is_git_repository(repository):
        raise NotAGitRepository(f"{repository} is not a git repository.")


def branch_exists(repository: Path, branch: str) -> bool:
    return git("show-ref", "--verify", "--quiet", f"refs/heads/{branch}", cwd=repository).returncode == 0


def _resolve_commit(repository: Path, ref: str) -> str:
    cp = git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", cwd=repository)
    if cp.returncode != 0:
        if ref == "HEAD":
            raise UnknownRef(
                f"{repository} has no commits yet: there is nothing to branch from.", field="repository"
            )
        raise UnknownRef(f"{ref!r} is not a commit in {repository}.")
    return cp.stdout.strip()


def worktree_create(*, repository: Path, branch: str, path: Path, base_ref: str | None = None) -> Path:
    """`git worktree add -b BRANCH PATH BASE` (BASE defaults to the repository's HEAD)."""
    repository = Path(repository)
    _require_repository(repository)
    validate_branch(branch)
    if branch_exists(repository, branch):
        raise BranchExists(f"Branch {branch!r} already exists in {repository}; reuse its worktree instead.")
    path = Path(path).absolute()  # absolute, so it can never read as an option either
    if os.path.lexists(path):
        raise PathExists(f"{path} already exists.")
    commit = _resolve_commit(repository, base_ref or "HEAD")
    cp = git("worktree", "add", "-b", branch, "--end-of-options", str(path), commit, cwd=repository)
    if cp.returncode != 0:
        raise GitFailed(f"git worktree add failed: {cp.stderr.strip()}")
    return Path(os.path.realpath(path))


def worktree_checkout(*, repository: Path, branch: str, path: Path) -> Path:
    """`git worktree add PATH BRANCH`: a new worktree on an existing branch that no worktree
    has checked out (e.g. one whose run's worktree was removed; its commits continue)."""
    repository = Path(repository)
    _require_repository(repository)
    validate_branch(branch)
    if not branch_exists(repository, branch):
        raise UnknownRef(f"There is no branch {branch!r} in {repository}.", field="branch")
    path = Path(path).absolute()
    if os.path.lexists(path):
        raise PathExists(f"{path} already exists.")
    cp = git("worktree", "add", "--end-of-options", str(path), branch, cwd=repository)
    if cp.returncode != 0:
        raise GitFailed(f"git worktree add failed: {cp.stderr.strip()}")
    return Path(os.path.realpath(path))


def head_commit(worktree: Path) -> str:
    """The full id of the commit `worktree`'s HEAD is at."""
    return _checked("rev-parse", "--verify", "HEAD^{commit}", cwd=worktree).strip()


def main_worktree(repository: Path) -> Path:
    """The repository's main work tree (the operator's own checkout), realpath."""
    return Path(os.path.realpath(_worktree_records(Path(repository))[0]["worktree"]))


def _worktree_records(repository: Path) -> list[dict[str, str]]:
    """`git worktree list --porcelain -z`: one dict per worktree (attribute -> value)."""
    out = _checked("worktree", "list", "--porcelain", "-z", cwd=repository)
    records: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for field in out.split("\0"):
        if not field:  # an empty field ends a record
            if current:
                records.append(current)
            current = {}
            continue
        key, _, value = field.partition(" ")
        current[key] = value
    if current:
        records.append(current)
    return records


def worktree_find(repository: Path, branch: str) -> Path | None:
    """The existing, present worktree that has `branch` checked out, for reuse."""
    repository = Path(repository)
    _require_repository(repository)
    for record in _worktree_records(repository):
        if record.get("branch") != f"refs/heads/{branch}" or "prunable" in record:
            continue
        if Path(record["worktree"]).is_dir():
            return Path(os.path.realpath(record["worktree"]))
    return None


def uncommitted_changes(worktree: Path) -> list[str]:
    """`git status --porcelain` lines: modified, staged and untracked (not ignored) paths."""
    out = _checked("status", "--porcelain", "-z", "--untracked-files=all", cwd=worktree)
    return [entry for entry in out.split("\0") if entry]


def worktree_remove(*, repository: Path, path: Path, force: bool = False) -> None:
    """Remove a linked worktree (its branch and commits stay). Refuses, with
    UncommittedChanges, a worktree holding uncommitted work unless force=True."""
    repository = Path(repository)
    _require_repository(repository)
    real = os.path.realpath(path)
    records = _worktree_records(repository)
    linked = [os.path.realpath(r["worktree"]) for r in records[1:]]  # the first is the main one
    if records and real == os.path.realpath(records[0]["worktree"]):
        raise WorktreeError(f"{path} is the repository's main worktree; lab never removes it.")
    if real not in linked:
        raise WorktreeError(f"{path} is not a worktree of {repository}.")
    if not force and Path(real).is_dir() and (changes := uncommitted_changes(Path(real))):
        raise UncommittedChanges(
            f"{path} has {len(changes)} uncommitted change(s); confirm to delete them with the worktree."
        )
    args = ["worktree", "remove", *(["--force"] if force else []), "--end-of-options", real]
    cp = git(*args, cwd=repository)
    if cp.returncode != 0:
        raise GitFailed(f"git worktree remove failed: {cp.stderr.strip()}")
