"""What the agent changed in a run's worktree: its commits since the run's base commit, and the
committed, staged, unstaged and untracked files, each with its diff.

git runs with argv lists only (seeding/worktrees.git), with external diff drivers, text
conversion and fsmonitor hooks turned off: a repository's own config never runs a program here.
File names come from git's NUL-separated output, so a name with spaces, quotes, newlines or
shell metacharacters is data; a path asked for is served only when git listed it, and an
untracked file is read only when its real path is inside the worktree. No Django.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from seeding.worktrees import git

# A file's diff shows at most this many lines at first; the rest is loaded on request.
PREVIEW_LINES = 400
# Even on request, a file's diff stops here (a generated file of millions of lines).
FULL_LINES = 20_000
# An untracked file is read up to this many bytes.
UNTRACKED_MAX_BYTES = 2 * 1024 * 1024
# A section lists at most this many files (the rest by count).
MAX_FILES = 500
MAX_COMMITS = 200

# Config that could make git run a program or rewrite what we read.
SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.quotePath=false", "-c", "diff.noprefix=false")
DIFF_ARGS = ("--no-color", "--no-ext-diff", "--no-textconv", "-M")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")

SECTIONS = ("committed", "staged", "unstaged", "untracked")


class ChangesError(Exception):
    """Git could not answer; the message is safe to show the operator."""


@dataclass(frozen=True)
class Line:
    kind: str  # "add", "del", "ctx", "hunk", "meta"
    text: str  # without the leading +/-/space for add/del/ctx


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # added, modified, deleted, renamed, copied, type changed, untracked
    old_path: str = ""  # a rename's or copy's source
    binary: bool = False
    additions: int = 0
    deletions: int = 0
    lines: tuple[Line, ...] = ()
    total_lines: int = 0  # the diff's length before truncation

    @property
    def truncated(self) -> bool:
        return self.total_lines > len(self.lines)


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    body: str
    author: str
    date: str


@dataclass
class Changes:
    base: str
    commits: list[Commit] = field(default_factory=list)
    sections: dict[str, list[FileChange]] = field(default_factory=dict)
    hidden: dict[str, int] = field(default_factory=dict)  # files over MAX_FILES per section
    notes: list[str] = field(default_factory=list)  # what the view could not show, and why


STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied", "T": "type changed"}


def _git(cwd: Path, *args: str) -> str:
    cp = git(*SAFE_CONFIG, *args, cwd=cwd)
    if cp.returncode != 0:
        raise ChangesError(f"git {args[0]} failed: {cp.stderr.strip() or 'no output'}")
    return cp.stdout


# --- parsing (pure) ---------------------------------------------------------------------------


def parse_name_status(out: str) -> list[tuple[str, str, str]]:
    """`git diff --name-status -z`: (status word, old path, path) per file, in git's order."""
    fields = out.split("\0")
    entries: list[tuple[str, str, str]] = []
    i = 0
    while i < len(fields) and fields[i]:
        code = fields[i]
        letter = code[0]
        if letter in "RC":
            entries.append((STATUS[letter], fields[i + 1], fields[i + 2]))
            i += 3
        else:
            entries.append((STATUS.get(letter, "changed"), "", fields[i + 1]))
            i += 2
    return entries


def parse_numstat(out: str) -> list[tuple[int, int, bool]]:
    """`git diff --numstat -z`: (additions, deletions, binary) per file, in git's order. A
    rename's record is "added\\tdeleted\\t" then the two paths as their own fields."""
    fields = out.split("\0")
    stats: list[tuple[int, int, bool]] = []
    i = 0
    while i < len(fields) and fields[i]:
        added, deleted, path = fields[i].split("\t", 2)
        binary = added == "-" and deleted == "-"
        stats.append((0 if binary else int(added), 0 if binary else int(deleted), binary))
        i += 3 if path == "" else 1
    return stats


def split_patch(out: str) -> list[list[str]]:
    """A multi-file patch as one list of lines per file ("diff --git" starts each)."""
    files: list[list[str]] = []
    for line in out.split("\n"):
        if line.startswith("diff --git "):
            files.append([])
        if files:
            files[-1].append(line)
    if files and files[-1] and files[-1][-1] == "":
        files[-1].pop()
    return files


def diff_lines(patch: list[str]) -> list[Line]:
    """One file's patch lines as typed lines, the header (diff --git, index, ---/+++) left out."""
    lines: list[Line] = []
    in_hunks = False
    for raw in patch:
        if raw.startswith("@@"):
            in_hunks = True
            lines.append(Line("hunk", raw))
        elif not in_hunks:
            continue
        elif raw.startswith("+"):
            lines.append(Line("add", raw[1:]))
        elif raw.startswith("-"):
            lines.append(Line("del", raw[1:]))
        elif raw.startswith("\\"):
            lines.append(Line("meta", raw))
        else:
            lines.append(Line("ctx", raw[1:]))
    return lines


def file_changes(
    name_status: str, numstat: str, patch: str, *, limit: int = PREVIEW_LINES
) -> list[FileChange]:
    """The three views of one `git diff` joined file by file (git orders them alike)."""
    entries = parse_name_status(name_status)
    stats = parse_numstat(numstat)
    patches = split_patch(patch)
    if not (len(entries) == len(stats) == len(patches)):
        raise ChangesError("git's file list and its patch disagree; reload to try again.")
    out = []
    for (status, old, path), (added, deleted, binary), lines_of in zip(entries, stats, patches, strict=True):
        lines = [] if binary else diff_lines(lines_of)
        out.append(
            FileChange(
                path=path,
                status=status,
                old_path=old,
                binary=binary,
                additions=added,
                deletions=deleted,
                lines=tuple(lines[:limit]),
                total_lines=len(lines),
            )
        )
    return out


def looks_binary(data: bytes) -> bool:
    """git's own test: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:8000]


def untracked_change(path: str, data: bytes, *, size: int, limit: int = PREVIEW_LINES) -> FileChange:
    """An untracked file as an all-added diff (the file's start when it is too big to read)."""
    if looks_binary(data):
        return FileChange(path=path, status="untracked", binary=True)
    text = data.decode("utf-8", errors="replace")
    rows = text.split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    lines = [Line("add", row) for row in rows]
    if size > len(data):
        lines.append(Line("meta", f"… the file has {size} bytes; the first {len(data)} are shown"))
    return FileChange(
        path=path,
        status="untracked",
        additions=len(rows),
        lines=tuple(lines[:limit]),
        total_lines=len(lines),
    )


# --- reading a worktree -----------------------------------------------------------------------


def _diff(
    cwd: Path, range_args: tuple[str, ...], paths: tuple[str, ...] = (), *, limit: int
) -> list[FileChange]:
    spec = ("--", *(f":(literal){p}" for p in paths)) if paths else ()
    name_status = _git(cwd, "diff", *DIFF_ARGS, "--name-status", "-z", *range_args, *spec)
    numstat = _git(cwd, "diff", *DIFF_ARGS, "--numstat", "-z", *range_args, *spec)
    patch = _git(cwd, "diff", *DIFF_ARGS, "--patch", *range_args, *spec)
    return file_changes(name_status, numstat, patch, limit=limit)


def section_args(section: str, base: str, head: str = "HEAD") -> tuple[str, ...]:
    return {
        "committed": (base, head),
        "staged": ("--cached",),
        "unstaged": (),
    }[section]


def untracked_paths(worktree: Path) -> list[str]:
    out = _git(worktree, "ls-files", "--others", "--exclude-standard", "-z")
    return [p for p in out.split("\0") if p]


def read_untracked(worktree: Path, path: str, *, limit: int) -> FileChange:
    """An untracked file, read only when its real path is inside the worktree (a symlink the
    agent made to /etc/passwd is named, not read)."""
    root = os.path.realpath(worktree)
    full = os.path.join(root, path)
    real = os.path.realpath(full)
    if os.path.islink(full) or os.path.commonpath([root, real]) != root or not os.path.isfile(real):
        return FileChange(path=path, status="untracked", binary=True)
    size = os.path.getsize(real)
    with open(real, "rb") as f:
        data = f.read(UNTRACKED_MAX_BYTES)
    return untracked_change(path, data, size=size, limit=limit)


def commits(cwd: Path, base: str, head: str = "HEAD") -> list[Commit]:
    fmt = "%H%x1f%an%x1f%aI%x1f%s%x1f%b"
    out = _git(cwd, "log", "-z", f"--max-count={MAX_COMMITS}", f"--format={fmt}", f"{base}..{head}", "--")
    found = []
    for record in out.split("\0"):
        if not record.strip():
            continue
        sha, author, date, subject, body = record.split("\x1f", 4)
        found.append(Commit(sha=sha.strip(), subject=subject, body=body.strip(), author=author, date=date))
    return found


def worktree_changes(
    *, worktree: Path, base: str, repository: Path | None = None, branch: str = ""
) -> Changes:
    """Everything the view shows. Without the worktree (removed), the commits and the committed
    diff come from the repository's branch, with a note saying what cannot be shown any more."""
    if base and not _SHA.fullmatch(base):
        raise ChangesError("The run's recorded base commit is not a commit id.")
    changes = Changes(base=base)
    if not base:
        changes.notes.append(
            "lab did not record this run's base commit (the run started before it did): only "
            "the changes not yet committed are shown."
        )
    if Path(worktree).is_dir():
        cwd, head, live = Path(worktree), "HEAD", True
    else:
        live = False
        where = f"The worktree {worktree} no longer exists"
        if repository is None or not branch or not Path(repository).is_dir():
            changes.notes.append(f"{where}, and its repository cannot be read: there is nothing to show.")
            return changes
        cwd, head = Path(repository), f"refs/heads/{branch}"
        if git("rev-parse", "--verify", "--quiet", f"{head}^{{commit}}", cwd=cwd).returncode != 0:
            changes.notes.append(f"{where}, and its branch {branch} is gone from the repository.")
            return changes
        changes.notes.append(
            f"{where}: what was not committed is gone with it. The commits on {branch} are shown "
            "from the repository."
        )
    if base:
        changes.commits = commits(cwd, base, head)
        put(changes, "committed", _diff(cwd, section_args("committed", base, head), limit=PREVIEW_LINES))
    if live:
        put(changes, "staged", _diff(cwd, section_args("staged", base), limit=PREVIEW_LINES))
        put(changes, "unstaged", _diff(cwd, section_args("unstaged", base), limit=PREVIEW_LINES))
        paths = untracked_paths(cwd)
        put(changes, "untracked", [read_untracked(cwd, p, limit=PREVIEW_LINES) for p in paths[:MAX_FILES]])
        if len(paths) > MAX_FILES:
            changes.hidden["untracked"] = len(paths) - MAX_FILES
    return changes


def put(changes: Changes, section: str, files: list[FileChange]) -> None:
    changes.sections[section] = files[:MAX_FILES]
    if len(files) > MAX_FILES:
        changes.hidden[section] = len(files) - MAX_FILES


def one_file(*, worktree: Path, base: str, section: str, path: str) -> FileChange:
    """One file's whole diff (up to FULL_LINES), for "load the rest". Only a path git lists in
    that section is served."""
    if section not in SECTIONS:
        raise ChangesError("No such section.")
    if section == "committed" and not _SHA.fullmatch(base):
        raise ChangesError("The run's base commit is not recorded.")
    cwd = Path(worktree)
    if not cwd.is_dir():
        raise ChangesError(f"The worktree {worktree} no longer exists.")
    if section == "untracked":
        if path not in untracked_paths(cwd):
            raise ChangesError(f"{path} is not an untracked file of this worktree.")
        return read_untracked(cwd, path, limit=FULL_LINES)
    args = section_args(section, base)
    listed = {
        p: old
        for _status, old, p in parse_name_status(_git(cwd, "diff", *DIFF_ARGS, "--name-status", "-z", *args))
    }
    if path not in listed:
        raise ChangesError(f"{path} has no {section} change.")
    paths = (listed[path], path) if listed[path] else (path,)
    found = [f for f in _diff(cwd, args, paths, limit=FULL_LINES) if f.path == path]
    if not found:
        raise ChangesError(f"{path} has no {section} change.")
    return found[0]
