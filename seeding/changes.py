"""What the agent changed in a run's worktree: its commits since the run's base commit, and the
committed, staged, unstaged and untracked files, each with its diff.

Git runs through lab's safe runner (providers/safegit: a repository's config runs no program
here) with argv lists only. Everything git or a file gives is bytes: a name or a line that is
not UTF-8 shows with U+FFFD, and the name git listed (every byte kept) is what goes back to it.
The worktree is the agent's, so nothing in it may blank or stall the view:

- memory is bounded: git's patch is streamed and each file keeps at most `limit` lines of at
  most LINE_MAX_BYTES; one page holds at most PAGE_LINES lines and reads at most PAGE_READ_BYTES
  of patches and untracked files; each cut is said on the page, with the file's rest on request;
- a special file (FIFO, socket, device, symbolic link, submodule, a conflict) is named, never
  opened or diffed: git itself fails a whole diff on a tracked file replaced by a FIFO, so such
  entries are left out of the patch run;
- an entry git cannot diff (the worktree changed while it was read) says so, and the rest shows.

A path asked for is served only when git listed it, and an untracked file is read only when it
is a regular file whose real path is inside the worktree. No Django.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from providers import safegit

# A file's diff shows at most this many lines at first; the rest is loaded on request.
PREVIEW_LINES = 400
# Even on request, a file's diff stops here (a generated file of millions of lines).
FULL_LINES = 20_000
# A longer diff line (minified code) is held up to here; the page shows less (runs/highlight).
LINE_MAX_BYTES = 8 * 1024
# One page view holds at most this many diff lines in all, and reads at most this much.
PAGE_LINES = 20_000
PAGE_READ_BYTES = 64 * 1024 * 1024
# An untracked file is read up to this many bytes for the page, and up to the larger on request.
UNTRACKED_PREVIEW_BYTES = 256 * 1024
UNTRACKED_MAX_BYTES = 2 * 1024 * 1024
# A section lists at most this many files (the rest by count).
MAX_FILES = 500
MAX_COMMITS = 200
# A file list or the commit log is read up to this many bytes.
LIST_MAX_BYTES = 16 * 1024 * 1024
# With more special entries than this, the unstaged patch is not asked for at all (one pathspec
# per entry keeps them out of it).
MAX_SPECIAL = 1000
GIT_TIMEOUT_S = 30.0

DIFF_ARGS = (
    "--no-color",
    *safegit.DIFF_SAFETY,
    "-M",
    "--ignore-submodules=dirty",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")

SECTIONS = ("committed", "staged", "unstaged", "untracked")


class ChangesError(Exception):
    """Git could not answer; the message is safe to show the operator."""


_CONTENT = ("add", "del", "ctx")


@dataclass(frozen=True)
class Line:
    kind: str  # "add", "del", "ctx", "hunk", "meta"
    text: str  # without the leading +/-/space for add/del/ctx


@dataclass(frozen=True)
class FileChange:
    path: str  # as git listed it (undecodable bytes kept as surrogates): what goes back to git
    status: str  # added, modified, deleted, renamed, copied, type changed, untracked
    old_path: str = ""  # a rename's or copy's source
    binary: bool = False
    additions: int = 0
    deletions: int = 0
    lines: tuple[Line, ...] = ()
    # The diff's content lines read (added, removed, context; not its @@ headers): the note's
    # "of N lines" then agrees with the summary's +N for a new file.
    total_lines: int = 0
    special: str = ""  # what the entry is when it is not a regular file ("a FIFO"): not diffed
    cut: str = ""  # why the diff shown stops before its end, for the operator

    @property
    def shown_lines(self) -> int:
        return sum(1 for line in self.lines if line.kind in _CONTENT)

    @property
    def truncated(self) -> bool:
        return self.total_lines > self.shown_lines or bool(self.cut)

    @property
    def at_cap(self) -> bool:
        """Loading the file alone would show no more: its lines shown reach FULL_LINES."""
        return len(self.lines) >= FULL_LINES

    @property
    def shown_path(self) -> str:
        return safegit.shown(self.path)

    @property
    def shown_old_path(self) -> str:
        return safegit.shown(self.old_path)


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


@dataclass
class Budget:
    """What one view may still hold and read; shared by its sections."""

    lines: int = PAGE_LINES
    read: int = PAGE_READ_BYTES

    def spent(self) -> bool:
        return self.read <= 0 or self.lines <= 0


STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied", "T": "type changed"}


def _run(cwd: Path, *args: str) -> bytes:
    try:
        done = safegit.run(*args, cwd=cwd, timeout=GIT_TIMEOUT_S, max_stdout=LIST_MAX_BYTES)
    except safegit.GitTimeout as exc:
        raise ChangesError(str(exc)) from None
    if not done.truncated and done.returncode != 0:
        raise ChangesError(f"git {args[0]} failed: {done.err or 'no output'}")
    return done.stdout


# --- parsing (pure) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One record of `git diff --raw -z`."""

    letter: str
    old_mode: str
    new_mode: str
    old_path: str
    path: str


def parse_raw(out: bytes) -> list[Entry]:
    """`git diff --raw -z`: ":oldmode newmode oldsha newsha STATUS" then one path (two for a
    rename or copy) per record. A record cut short (a capped read) is dropped."""
    fields = out.split(b"\0")
    fields.pop()  # after the last NUL: empty, or what a capped read cut
    entries: list[Entry] = []
    i = 0
    while i < len(fields) and fields[i].startswith(b":"):
        meta = fields[i][1:].split(b" ")
        if len(meta) < 5 or not meta[4]:
            break
        letter = chr(meta[4][0])
        count = 2 if letter in "RC" else 1
        if i + count >= len(fields):
            break
        names = [safegit.path(f) for f in fields[i + 1 : i + 1 + count]]
        old = names[0] if count == 2 else ""
        entries.append(
            Entry(
                letter, meta[0].decode("ascii", "replace"), meta[1].decode("ascii", "replace"), old, names[-1]
            )
        )
        i += 1 + count
    return entries


_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words; "" for a regular file."""
    return next((name for test, name in _KINDS if test(mode)), "" if stat.S_ISREG(mode) else "a special file")


def special_of(entry: Entry, worktree: Path | None) -> str:
    """Why `entry` is named and not diffed, or "" when it is a regular file's change. With
    `worktree` (the unstaged section), the file on disk is what git would read."""
    if entry.letter == "U":
        return "unmerged (a conflict)"
    for mode, prefix in ((entry.new_mode, ""), (entry.old_mode, "was ")):
        if mode == "120000":
            return prefix + "a symbolic link"
        if mode == "160000":
            return prefix + "a submodule"
    if worktree is not None and entry.letter != "D":
        try:
            return kind_of(os.lstat(os.path.join(worktree, entry.path)).st_mode)
        except OSError:
            return ""  # gone since git listed it: git's diff says what it finds
    return ""


def diff_lines(patch: list[str]) -> list[Line]:
    """One file's patch lines as typed lines, the header (diff --git, index, ---/+++) left out."""
    lines: list[Line] = []
    in_hunks = False
    for raw in patch:
        line = _line(raw, in_hunks)
        in_hunks = in_hunks or (line is not None and line.kind == "hunk")
        if line is not None:
            lines.append(line)
    return lines


def _line(raw: str, in_hunks: bool) -> Line | None:
    if raw.startswith("@@"):
        return Line("hunk", raw)
    if not in_hunks:
        return None
    if raw.startswith("+"):
        return Line("add", raw[1:])
    if raw.startswith("-"):
        return Line("del", raw[1:])
    if raw.startswith("\\"):
        return Line("meta", raw)
    return Line("ctx", raw[1:])


def looks_binary(data: bytes) -> bool:
    """git's own test: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:8000]


def untracked_change(
    path: str, data: bytes, *, size: int, limit: int = PREVIEW_LINES, budget: Budget | None = None
) -> FileChange:
    """An untracked file as an all-added diff (the file's start when it is too big to read)."""
    if looks_binary(data):
        return FileChange(path=path, status="untracked", binary=True)
    rows = data.split(b"\n")
    if rows and rows[-1] == b"":
        rows.pop()
    keep = min(limit, budget.lines if budget is not None else limit)
    lines = [Line("add", _cut_text(row)) for row in rows[:keep]]
    if budget is not None:
        budget.lines -= len(lines)
    cut = ""
    if size > len(data):
        cut = f"The file has {size} bytes; the first {len(data)} were read."
    elif len(rows) > len(lines) and keep < limit:
        cut = f"Not all shown: the page holds at most {PAGE_LINES} lines in all."
    return FileChange(
        path=path,
        status="untracked",
        additions=len(rows),
        lines=tuple(lines),
        total_lines=len(rows),
        cut=cut,
    )


def _cut_text(raw: bytes) -> str:
    if len(raw) > LINE_MAX_BYTES:
        return safegit.text(raw[:LINE_MAX_BYTES]) + "…"
    return safegit.text(raw)


# --- reading a worktree -----------------------------------------------------------------------


def _literal(paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f":(literal){p}" for p in paths)


def _diff(
    cwd: Path,
    range_args: tuple[str, ...],
    paths: tuple[str, ...] = (),
    *,
    limit: int,
    budget: Budget,
    worktree_side: bool = False,
) -> tuple[list[FileChange], int]:
    """One section's files (at most MAX_FILES) and how many more there are."""
    spec = ("--", *_literal(paths)) if paths else ()
    entries = parse_raw(_run(cwd, "diff", *DIFF_ARGS, "--raw", "-z", *range_args, *spec))
    hidden = max(len(entries) - MAX_FILES, 0)
    specials = {e.path: special_of(e, cwd if worktree_side else None) for e in entries}
    special_paths = tuple(p for p, why in specials.items() if why)
    shown = entries[:MAX_FILES]
    if len(special_paths) > MAX_SPECIAL:
        why = f"not diffed: the worktree has {len(special_paths)} special files here"
        patches: dict[str, FileChange] = {}
        failure = why
    else:
        # Special entries stay out of git's patch run: a FIFO there fails the whole of it.
        keep_out = tuple(f":(exclude,literal){p}" for p in special_paths)
        patch_spec = ("--", *(_literal(paths) if paths else (".",)), *keep_out)
        wanted = {e.path for e in shown if not specials[e.path]}
        patches, failure = _patches(cwd, (*range_args, *patch_spec), wanted, limit=limit, budget=budget)
    out = []
    for e in shown:
        status = STATUS.get(e.letter, "changed")
        if specials[e.path]:
            out.append(FileChange(path=e.path, status=status, old_path=e.old_path, special=specials[e.path]))
        elif e.path in patches:
            out.append(dataclasses.replace(patches[e.path], status=status, old_path=e.old_path))
        else:
            cut = failure or "No diff: the file changed while lab read it; reload to see it."
            out.append(FileChange(path=e.path, status=status, old_path=e.old_path, cut=cut))
    return out, hidden


_NOT_LOADED = (
    f"Not loaded: one page shows at most {PAGE_LINES} lines and reads at most "
    f"{PAGE_READ_BYTES // 2**20} MB; load this file alone."
)


def _patches(
    cwd: Path, args: tuple[str, ...], wanted: set[str], *, limit: int, budget: Budget
) -> tuple[dict[str, FileChange], str]:
    """`git diff --numstat --patch -z`, streamed: one FileChange per wanted path. The numstat
    records and the patches come from one git run, so they pair up in order; a file that is
    not wanted is read past, not kept. The second value says why wanted files are missing."""
    found: dict[str, FileChange] = {}
    argv = ("diff", *DIFF_ARGS, "--numstat", "--patch", "-z", *args)
    try:
        with safegit.stream(*argv, cwd=cwd, timeout=GIT_TIMEOUT_S) as out:
            stats = _numstat(out)
            reader = _PatchReader(out, budget)
            for index, (added, deleted, binary, old, path) in enumerate(stats):
                if len(found) == len(wanted):
                    return found, ""  # the rest is not shown: leaving stops git unread
                if reader.spent():
                    return found, _NOT_LOADED
                if not reader.next_file(index):
                    break
                take = path in wanted
                lines, total, cut = reader.file(limit if take and not binary else 0)
                if take:
                    found[path] = FileChange(
                        path=path,
                        status="",
                        old_path=old,
                        binary=binary,
                        additions=added,
                        deletions=deleted,
                        lines=tuple(lines),
                        total_lines=total,
                        cut=cut,
                    )
            if out.finish() != 0:
                return found, f"git could not diff this: {out.err or 'no output'}"
    except safegit.GitTimeout as exc:
        return found, str(exc)
    return found, ""


def _numstat(out: safegit.Lines) -> list[tuple[int, int, bool, str, str]]:
    """The numstat records at the head of a `--numstat --patch -z` stream, up to the empty
    record that ends them: (additions, deletions, binary, old path, path)."""
    stats: list[tuple[int, int, bool, str, str]] = []
    while (piece := out.read(b"\0", LINE_MAX_BYTES * 2)) is not None:
        record = piece[0]
        if not record:
            break
        added, _, rest = record.partition(b"\t")
        deleted, _, name = rest.partition(b"\t")
        old = ""
        if not name:  # a rename: the two paths follow as their own records
            first, second = out.read(b"\0", LINE_MAX_BYTES * 2), out.read(b"\0", LINE_MAX_BYTES * 2)
            if first is None or second is None:
                break
            old, name = safegit.path(first[0]), second[0]
        binary = added == b"-" and deleted == b"-"
        stats.append(
            (0 if binary else int(added), 0 if binary else int(deleted), binary, old, safegit.path(name))
        )
    return stats


class _PatchReader:
    """Patch lines from the stream, file by file ("diff --git" starts each)."""

    def __init__(self, out: safegit.Lines, budget: Budget) -> None:
        self._out = out
        self._budget = budget
        self._pending: tuple[bytes, bool] | None = None  # a file's first line, read by the last
        self._started = -1

    def spent(self) -> bool:
        return self._budget.spent()

    def _read(self) -> tuple[bytes, bool] | None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            return pending
        piece = self._out.read(b"\n", LINE_MAX_BYTES)
        if piece is not None:
            self._budget.read -= len(piece[0]) + 1
        return piece

    def next_file(self, index: int) -> bool:
        """Move to the start of the index-th file's patch; False when the stream has no more."""
        while self._started < index:
            piece = self._read()
            if piece is None:
                return False
            if piece[0].startswith(b"diff --git "):
                self._started += 1
        return True

    def file(self, limit: int) -> tuple[list[Line], int, str]:
        """The current file's lines up to the next file's start: at most `limit` kept (and no
        more than the page's budget), all counted while the page may still read."""
        lines: list[Line] = []
        total = 0
        in_hunks = False
        cut = ""
        while (piece := self._read()) is not None:
            raw, long = piece
            if raw.startswith(b"diff --git "):
                self._pending = piece
                self._budget.read += len(raw) + 1  # read again as the next file's start
                break
            line = _line(safegit.text(raw) + ("…" if long else ""), in_hunks)
            if line is None:
                continue
            in_hunks = in_hunks or line.kind == "hunk"
            total += line.kind in _CONTENT
            if len(lines) < limit and self._budget.lines > 0:
                lines.append(line)
                self._budget.lines -= 1
            elif len(lines) < limit and not cut:
                cut = f"Not all shown: the page holds at most {PAGE_LINES} lines in all."
            if self._budget.read <= 0:
                cut = f"Not all read: the page reads at most {PAGE_READ_BYTES // 2**20} MB of diffs."
                break
        return lines, total, cut


def section_args(section: str, base: str, head: str = "HEAD") -> tuple[str, ...]:
    return {
        "committed": (base, head),
        "staged": ("--cached",),
        "unstaged": (),
    }[section]


def untracked_paths(worktree: Path) -> list[str]:
    out = _run(worktree, "ls-files", "--others", "--exclude-standard", "-z")
    pieces = out.split(b"\0")
    if not out.endswith(b"\0"):
        pieces.pop()  # the last name was cut by the capped read
    return [safegit.path(p) for p in pieces if p]


def read_untracked(
    worktree: Path, path: str, *, limit: int, cap: int, budget: Budget | None = None
) -> FileChange:
    """An untracked file, read only when it is a regular file whose real path is inside the
    worktree: a symlink the agent made to /etc/passwd, or a FIFO, is named, not opened."""
    root = os.path.realpath(worktree)
    full = os.path.join(root, path)
    try:
        kind = kind_of(os.lstat(full).st_mode)
    except OSError:
        return FileChange(path=path, status="untracked", cut="Gone since git listed it.")
    real = os.path.realpath(full)
    if not kind and os.path.commonpath([root, real]) != root:
        kind = "outside the worktree"
    if kind:
        return FileChange(path=path, status="untracked", special=kind)
    if budget is not None and budget.spent():
        return FileChange(path=path, status="untracked", cut=_NOT_LOADED)
    try:
        # O_NOFOLLOW and O_NONBLOCK: swapped for a symlink or a FIFO since the check, the open
        # fails or returns at once instead of following or hanging; fstat says what was opened.
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return FileChange(path=path, status="untracked", cut=f"Could not be read: {exc.strerror}.")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return FileChange(path=path, status="untracked", special=kind_of(st.st_mode))
        want = min(cap, budget.read) if budget is not None else cap
        data = f.read(want)
    if budget is not None:
        budget.read -= len(data)
    return untracked_change(path, data, size=st.st_size, limit=limit, budget=budget)


_STATUS_ARGS = (
    *("status", "--porcelain=v2", "-z", "--branch"),
    *("--untracked-files=all", "--ignore-submodules=dirty"),
)


def signature(worktree: Path) -> str | None:
    """A digest that changes whenever what worktree_changes shows can: HEAD, the index's entry
    for each changed path (git status), and each changed or untracked file's inode, size and
    times (an edit to a file that was already modified leaves git's status line as it was).
    None when it cannot tell: then the caller reads the changes again."""
    try:
        done = safegit.run(
            *_STATUS_ARGS,
            cwd=worktree,
            timeout=GIT_TIMEOUT_S,
            max_stdout=LIST_MAX_BYTES,
        )
    except safegit.GitTimeout:
        return None
    if done.returncode != 0 or done.truncated:
        return None
    digest = hashlib.sha256(os.fsencode(os.path.realpath(worktree)) + b"\0" + done.stdout)
    records = iter(done.stdout.split(b"\0"))
    for record in records:
        # The path is the last field: after 8 fields ("1"), 9 ("2", a rename's source follows
        # as its own record), 10 ("u"), or the "?"/"!" marker.
        fields = {b"1": 8, b"2": 9, b"u": 10, b"?": 1, b"!": 1}.get(record[:1])
        if fields is None:
            continue
        name = record.split(b" ", fields)[-1]
        if record[:1] == b"2":
            next(records, None)
        try:
            st = os.lstat(os.path.join(os.fsencode(worktree), name))
        except OSError:
            continue
        digest.update(b"%d %d %d %d\0" % (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return digest.hexdigest()


def commits(cwd: Path, base: str, head: str = "HEAD") -> list[Commit]:
    fmt = "%H%x1f%an%x1f%aI%x1f%s%x1f%b"
    out = _run(cwd, "log", "-z", f"--max-count={MAX_COMMITS}", f"--format={fmt}", f"{base}..{head}", "--")
    found = []
    for record in out.split(b"\0"):
        fields = safegit.text(record).split("\x1f", 4)
        if not record.strip() or len(fields) != 5:
            continue
        sha, author, date, subject, body = fields
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
    if is_worktree(worktree):
        cwd, head, live = Path(worktree), "HEAD", True
    else:
        live = False
        where = f"The worktree {worktree} no longer exists"
        if repository is None or not branch or not Path(repository).is_dir():
            changes.notes.append(f"{where}, and its repository cannot be read: there is nothing to show.")
            return changes
        cwd, head = Path(repository), f"refs/heads/{branch}"
        try:
            known = safegit.run(
                "rev-parse", "--verify", "--quiet", f"{head}^{{commit}}", cwd=cwd, timeout=GIT_TIMEOUT_S
            )
        except safegit.GitTimeout as exc:
            raise ChangesError(str(exc)) from None
        if known.returncode != 0:
            changes.notes.append(f"{where}, and its branch {branch} is gone from the repository.")
            return changes
        if base and not _has_commit(cwd, base):
            changes.notes.append(
                f"{where}, and the commit the run started from ({base[:10]}) is not in the repository: "
                "its commits cannot be told apart."
            )
            return changes
        changes.notes.append(
            f"{where}: what was not committed is gone with it. The commits on {branch} are shown "
            "from the repository."
        )
    budget = Budget()
    if base:
        changes.commits = commits(cwd, base, head)
        put(
            changes,
            "committed",
            _diff(cwd, section_args("committed", base, head), limit=PREVIEW_LINES, budget=budget),
        )
    if live:
        put(changes, "staged", _diff(cwd, section_args("staged", base), limit=PREVIEW_LINES, budget=budget))
        put(
            changes,
            "unstaged",
            _diff(
                cwd, section_args("unstaged", base), limit=PREVIEW_LINES, budget=budget, worktree_side=True
            ),
        )
        paths = untracked_paths(cwd)
        files = [
            read_untracked(cwd, p, limit=PREVIEW_LINES, cap=UNTRACKED_PREVIEW_BYTES, budget=budget)
            for p in paths[:MAX_FILES]
        ]
        put(changes, "untracked", (files, max(len(paths) - MAX_FILES, 0)))
    return changes


def is_worktree(path: Path | str) -> bool:
    """Whether `path` is still a worktree's root. After `git worktree remove`, a folder
    something left or made again at its path has no `.git`: git run there would walk up to
    whatever repository encloses it (lab's own data dir may sit in one) and answer for that."""
    return os.path.isdir(path) and os.path.lexists(os.path.join(path, ".git"))


def _has_commit(cwd: Path, sha: str) -> bool:
    try:
        done = safegit.run("cat-file", "-e", f"{sha}^{{commit}}", cwd=cwd, timeout=GIT_TIMEOUT_S)
    except safegit.GitTimeout as exc:
        raise ChangesError(str(exc)) from None
    return done.returncode == 0


def put(changes: Changes, section: str, found: tuple[list[FileChange], int]) -> None:
    files, hidden = found
    changes.sections[section] = files
    if hidden:
        changes.hidden[section] = hidden


def one_file(*, worktree: Path, base: str, section: str, path: str) -> FileChange:
    """One file's whole diff (up to FULL_LINES), for "load the rest". Only a path git lists in
    that section is served; `path` may be the name as shown (U+FFFD for bytes not UTF-8), which
    must then name exactly one listed file."""
    if section not in SECTIONS:
        raise ChangesError("No such section.")
    if section == "committed" and not _SHA.fullmatch(base):
        raise ChangesError("The run's base commit is not recorded.")
    cwd = Path(worktree)
    if not is_worktree(cwd):
        raise ChangesError(f"The worktree {worktree} no longer exists.")
    if section == "untracked":
        name = _listed(untracked_paths(cwd), path, section)
        return read_untracked(cwd, name, limit=FULL_LINES, cap=UNTRACKED_MAX_BYTES)
    args = section_args(section, base)
    entries = parse_raw(_run(cwd, "diff", *DIFF_ARGS, "--raw", "-z", *args))
    name = _listed([e.path for e in entries], path, section)
    old = next(e.old_path for e in entries if e.path == name)
    budget = Budget(lines=FULL_LINES)
    found, _hidden = _diff(
        cwd,
        args,
        (old, name) if old else (name,),
        limit=FULL_LINES,
        budget=budget,
        worktree_side=section == "unstaged",
    )
    for f in found:
        if f.path == name:
            return f
    raise ChangesError(f"{safegit.shown(name)} has no {section} change.")


def _listed(names: list[str], asked: str, section: str) -> str:
    if asked in names:
        return asked
    matches = [n for n in names if safegit.shown(n) == asked]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ChangesError(
            f"{asked} names {len(matches)} files that differ only in bytes that are not UTF-8."
        )
    raise ChangesError(
        f"{asked} has no {section} change."
        if section != "untracked"
        else f"{asked} is not an untracked file of this worktree."
    )
