"""The one generic seeder: puts the operator's context text and skills pool into a worktree,
where any provider's SeedMeta says, and keeps them out of git.

It knows no provider (docs/architecture.md, principle 3): everything provider-specific arrives as a
SeedMeta. Rules it keeps for every provider:

* Two phases: plan every file, then write. A refused path aborts before anything is written.
* Paths are relative, free of '..' and '.git', and walked one component at a time with
  O_NOFOLLOW from a directory fd, so no symlink (even one pointing inside) is ever followed
  and a swapped-in link cannot redirect a write.
* Never clobbers: a file the repository tracks is skipped (lab never edits committed files),
  and so is an existing file lab did not write. lab knows what it wrote from a record of
  hashes in the worktree's own git dir (`lab-seed.json`), outside the work tree.
* Idempotent: a second run reports every file unchanged and writes nothing.
* Exclude entries go to `git rev-parse --git-path info/exclude`. For a linked worktree that is
  the common dir's file, shared with the main checkout and every other worktree; entries are
  only ever appended, under a lock, never rewritten.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import fcntl
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from providers.safefile import UnsafeFile, read_regular
from providers.schema import SeedMeta
from seeding.worktrees import git, git_path, toplevel

MAX_SIDE_FILE_BYTES = 16 * 1024 * 1024  # the exclude file and lab's record: far smaller in practice
RECORD_NAME = "lab-seed.json"  # per-worktree git dir: never in the work tree, never committed
EXCLUDE_HEADER = "# lab: files seeded into worktrees; never committed"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class SeedError(Exception):
    """Base class: the message is safe to show the operator."""


class UnsafePath(SeedError):
    """A path that is absolute, climbs with '..', enters .git, or crosses a symlink."""


class NotAWorktree(SeedError):
    pass


class SeedOutcome(enum.StrEnum):
    WRITE = "write"
    UNCHANGED = "unchanged"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class SeedAction:
    path: Path  # absolute
    outcome: SeedOutcome
    reason: str = ""
    applied: bool = False  # True once written; False on a dry run and for unchanged/skip


@dataclass(frozen=True, slots=True)
class _File:
    rel: PurePosixPath
    content: bytes
    executable: bool = False


# --- paths ------------------------------------------------------------------------------------


def safe_relpath(raw: str) -> PurePosixPath:
    """A seedable path relative to the worktree root, or UnsafePath."""
    if not raw or "\0" in raw:
        raise UnsafePath(f"Not a usable path: {raw!r}.")
    rel = PurePosixPath(raw)
    if rel.is_absolute():
        raise UnsafePath(f"{raw!r} is absolute; seeded paths are relative to the worktree.")
    if ".." in rel.parts:
        raise UnsafePath(f"{raw!r} climbs out with '..'.")
    if any(part.lower() == ".git" for part in rel.parts):
        raise UnsafePath(f"{raw!r} is inside .git; seeding never writes git's own files.")
    if rel == PurePosixPath("."):
        raise UnsafePath(f"{raw!r} is the worktree itself.")
    return rel


def _open_dir(root_fd: int, parts: tuple[str, ...], *, create: bool) -> int | None:
    """An fd for root/parts, each component opened with O_NOFOLLOW. None when a component is
    missing and create is False. A symlink or non-directory component raises UnsafePath."""
    fd = os.dup(root_fd)
    try:
        for i, part in enumerate(parts):
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = "/".join(parts[: i + 1])
                    raise UnsafePath(
                        f"{where} is a symlink or not a directory; lab does not follow it."
                    ) from None
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    return fd


def _read_existing(root_fd: int, rel: PurePosixPath) -> tuple[bytes, bool] | None:
    """(content, executable) of root/rel, None if absent; never follows a symlink."""
    dir_fd = _open_dir(root_fd, rel.parts[:-1], create=False)
    if dir_fd is None:
        return None
    try:
        try:
            st = os.stat(rel.name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"{rel} exists and is not a regular file (a symlink or a directory).")
        # Non-blocking: a FIFO swapped in after the stat must not hang the start.
        fd = os.open(rel.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as f:
            return f.read(), bool(st.st_mode & stat.S_IXUSR)
    finally:
        os.close(dir_fd)


def _write_file(root_fd: int, file: _File) -> None:
    """Write atomically: a temp file beside the target, fsync, rename over it."""
    dir_fd = _open_dir(root_fd, file.rel.parts[:-1], create=True)
    assert dir_fd is not None
    tmp = f".{file.rel.name}.lab-tmp-{secrets.token_hex(4)}"  # unique: seeds may run concurrently
    try:
        mode = 0o755 if file.executable else 0o644
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd
        )
        with os.fdopen(fd, "wb") as f:
            f.write(file.content)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode, dir_fd=dir_fd)  # umask must not decide a skill script's exec bit
        os.replace(tmp, file.rel.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    finally:
        os.close(dir_fd)


# --- the plan ---------------------------------------------------------------------------------


def _skills_files(pool: Path, skills_dir: PurePosixPath) -> tuple[list[_File], list[PurePosixPath]]:
    """Regular files of the pool under skills_dir, sorted; and the symlinks it skipped (the
    seeded tree must hold no link, wherever it points)."""
    files: list[_File] = []
    links: list[PurePosixPath] = []
    for dirpath, dirnames, filenames in os.walk(pool, followlinks=False):
        base = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d != ".git")  # a pool kept in git
        for name in sorted([*filenames, *dirnames]):
            src = base / name
            rel = skills_dir / src.relative_to(pool).as_posix()
            if src.is_symlink():
                links.append(rel)
            elif name != ".git" and name in filenames and src.is_file():
                mode = src.stat().st_mode
                files.append(_File(safe_relpath(str(rel)), src.read_bytes(), bool(mode & stat.S_IXUSR)))
    return files, links


def _planned_files(
    meta: SeedMeta, context_text: str | None, skills_pool: Path | None
) -> tuple[list[_File], list[PurePosixPath]]:
    files: list[_File] = []
    links: list[PurePosixPath] = []
    if context_text is not None:
        files.append(_File(safe_relpath(meta.context_file), context_text.encode()))
    if skills_pool is not None:
        if not skills_pool.is_dir():
            raise SeedError(f"The skills pool {skills_pool} is not a directory.")
        files_, links = _skills_files(skills_pool, safe_relpath(meta.skills_dir))
        files += files_
    return files, links


def _tracked(worktree: Path, rels: list[PurePosixPath]) -> set[str]:
    if not rels:
        return set()
    # :(literal) so a name with glob characters matches only itself.
    cp = git("ls-files", "-z", "--", *(f":(literal){r}" for r in rels), cwd=worktree)
    if cp.returncode != 0:
        raise SeedError(f"git ls-files failed in {worktree}: {cp.stderr.strip()}")
    return {p for p in cp.stdout.split("\0") if p}


def _sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _decide(
    file: _File, existing: tuple[bytes, bool] | None, tracked: bool, recorded: str | None
) -> tuple[SeedOutcome, str]:
    if tracked:
        return SeedOutcome.SKIP, "tracked by the repository; lab never edits committed files"
    if existing is None:
        return SeedOutcome.WRITE, ""
    if existing == (file.content, file.executable):
        return SeedOutcome.UNCHANGED, ""
    if recorded == _sha(existing[0]):
        return SeedOutcome.WRITE, "lab's earlier seed, updated"
    return SeedOutcome.SKIP, "exists and lab did not write it (or it was edited since)"


# --- exclude and record -----------------------------------------------------------------------


def _exclude_missing(exclude: Path, entries: tuple[str, ...]) -> list[str]:
    for entry in entries:
        if not entry.strip() or "\n" in entry or "\r" in entry:
            raise SeedError(f"Not a usable exclude entry: {entry!r}.")
    try:
        raw = read_regular(exclude, MAX_SIDE_FILE_BYTES)
    except FileNotFoundError:
        raw = b""
    except UnsafeFile as exc:  # a FIFO there would hang every later run start (they queue on a lock)
        raise SeedError(f"{exclude} {exc.strerror}; lab does not add its entries to it.") from None
    present = {line.strip() for line in raw.decode("utf-8", errors="surrogateescape").splitlines()}
    return [e for e in entries if e.strip() not in present]


def append_exclude(exclude: Path, entries: tuple[str, ...]) -> None:
    """Append the entries the exclude file lacks (under its lock, never rewritten)."""
    _append_exclude(exclude, entries)


def _append_exclude(exclude: Path, entries: tuple[str, ...]) -> None:
    exclude.parent.mkdir(parents=True, exist_ok=True)
    # Append under flock, never rewrite: the file is shared by every worktree of the repository.
    fd = os.open(exclude, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "r+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        missing = _exclude_missing(exclude, entries)  # re-read under the lock
        if not missing:
            return
        f.seek(0)
        current = f.read()
        lines = [] if not current or current.endswith(b"\n") else [""]
        if EXCLUDE_HEADER.encode() not in current:
            lines.append(EXCLUDE_HEADER)
        f.write(("\n".join([*lines, *missing]) + "\n").encode())
        f.flush()
        os.fsync(f.fileno())


def _load_record(path: Path) -> dict[str, str]:
    try:
        data = json.loads(read_regular(path, MAX_SIDE_FILE_BYTES))
    except (OSError, ValueError):  # missing, not a regular file, too large, not JSON: no record
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return {k: v for k, v in files.items() if isinstance(v, str)} if isinstance(files, dict) else {}


def _save_record(path: Path, files: dict[str, str]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}")
    tmp.write_text(json.dumps({"version": 1, "files": dict(sorted(files.items()))}, indent=1) + "\n")
    tmp.replace(path)


# --- entry point ------------------------------------------------------------------------------


def _worktree_root(worktree: Path) -> Path:
    real = Path(os.path.realpath(worktree))
    if not real.is_dir():
        raise NotAWorktree(f"{worktree} is not a directory.")
    if toplevel(real) != real:
        raise NotAWorktree(f"{worktree} is not the root of a git worktree.")
    return real


@contextlib.contextmanager
def _root_fd(root: Path) -> Iterator[int]:
    fd = os.open(root, _DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


def seed(
    worktree: Path,
    meta: SeedMeta,
    *,
    context_text: str | None,
    skills_pool: Path | None,
    dry_run: bool = False,
) -> list[SeedAction]:
    """Seed `worktree` per `meta`; one action per file considered, in a stable order."""
    root = _worktree_root(worktree)
    files, links = _planned_files(meta, context_text, skills_pool)
    tracked = _tracked(root, [f.rel for f in files])
    record_path = git_path(root, RECORD_NAME)
    record = _load_record(record_path)
    exclude = git_path(root, "info/exclude")
    with _root_fd(root) as root_fd:
        plan = [
            (f, *_decide(f, _read_existing(root_fd, f.rel), str(f.rel) in tracked, record.get(str(f.rel))))
            for f in files
        ]
        missing = _exclude_missing(exclude, meta.exclude_entries)
        if dry_run:
            return _actions(root, plan, links, exclude, bool(missing), record_path, applied=False)
        written = 0
        try:
            for file, outcome, _ in plan:
                if outcome is SeedOutcome.WRITE:
                    _write_file(root_fd, file)
                    record[str(file.rel)] = _sha(file.content)
                    written += 1
        finally:
            # Even after a failed write: what did land is lab's, and a re-run must know it.
            if written:
                _save_record(record_path, record)
    if missing:
        _append_exclude(exclude, meta.exclude_entries)
    return _actions(root, plan, links, exclude, bool(missing), record_path, applied=True)


def _actions(
    root: Path,
    plan: list[tuple[_File, SeedOutcome, str]],
    links: list[PurePosixPath],
    exclude: Path,
    exclude_changes: bool,
    record_path: Path,
    *,
    applied: bool,
) -> list[SeedAction]:
    out = [SeedAction(root / f.rel, o, r, applied and o is SeedOutcome.WRITE) for f, o, r in plan]
    out += [
        SeedAction(root / rel, SeedOutcome.SKIP, "a symlink in the skills pool; not copied") for rel in links
    ]
    if exclude_changes:
        out.append(SeedAction(exclude, SeedOutcome.WRITE, "git exclude entries", applied))
    else:
        out.append(SeedAction(exclude, SeedOutcome.UNCHANGED, "git exclude entries"))
    if any(o is SeedOutcome.WRITE for _, o, _ in plan):
        out.append(SeedAction(record_path, SeedOutcome.WRITE, "lab's record of what it seeded", applied))
    return out
