"""Incremental reading of an append-only JSONL file, by bytes.

Generic: no Django, no knowledge of any agent CLI. A caller keeps (offset, inode, skip_from)
between calls; each call reads only what was appended since, holds back a partial last line,
and detects truncation or replacement. One call reads at most `max_bytes`, or one line when
a line longer than that is all it would return: its memory is bounded by the larger of the two
(plus a chunk) no matter how large the file is; a line longer than `max_line_bytes` is skipped
without ever being held whole.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field

from providers.errors import TranscriptUnreadable
from providers.safefile import UnsafeFile, open_fd

DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # per call: a 100 MB file is read over several calls
DEFAULT_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class LinesRead:
    lines: list[tuple[int, bytes]]  # (start offset, raw line without its newline)
    offset: int  # end of the last complete line consumed (or mid-line while skipping)
    inode: int
    reset: bool = False  # truncated or replaced: everything was read again from 0
    oversized: int = 0  # lines longer than max_line_bytes skipped in this call
    skipped: list[tuple[int, int]] = field(default_factory=list)  # (start, length) of those
    skip_from: int | None = None  # inside an oversized line that started here: pass it back
    more: bool = False  # stopped at the byte budget: call again for the rest


def read_lines(
    path: str,
    offset: int = 0,
    inode: int = 0,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    *,
    skip_from: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> LinesRead:
    """Complete lines appended since `offset`.

    A missing file reads as empty (the CLI creates its transcript after lab learns the path);
    if the cursor had progress, a vanished file is a reset. Raises TranscriptUnreadable for a
    symlink or anything but a regular file.
    """
    # One open and one fstat per call, no context manager: this is the hot path of every wake.
    try:
        fd, st = open_fd(path)
    except FileNotFoundError:
        return LinesRead(lines=[], offset=0, inode=0, reset=offset > 0 or inode != 0)
    except UnsafeFile as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise TranscriptUnreadable(f"Refusing to follow a symlink: {path}") from None
        raise TranscriptUnreadable(f"The transcript {path} {exc.strerror}") from None
    except OSError as exc:
        raise TranscriptUnreadable(f"Cannot open the transcript {path}: {exc.strerror}") from None
    try:
        reset = (inode != 0 and st.st_ino != inode) or st.st_size < offset
        if reset:
            offset, skip_from = 0, None
        return _read_from(
            fd,
            offset=offset,
            inode=st.st_ino,
            reset=reset,
            skip_from=skip_from,
            max_line_bytes=max_line_bytes,
            max_bytes=max_bytes,
            chunk_bytes=chunk_bytes,
        )
    finally:
        os.close(fd)


def _read_from(
    fd: int,
    *,
    offset: int,
    inode: int,
    reset: bool,
    skip_from: int | None,
    max_line_bytes: int,
    max_bytes: int,
    chunk_bytes: int,
) -> LinesRead:
    scan = _Scan(max_line_bytes=max_line_bytes, line_start=offset, skip_from=skip_from)
    pos = offset  # file position of the next byte to read
    budget = max_bytes
    more = False
    while True:
        if budget <= 0 and not scan.empty_handed():
            more = True  # stopped at the budget: call again for the rest
            break
        # Past the budget only to finish a line longer than it (or find it is over
        # max_line_bytes): a pass that returned nothing would never move the cursor.
        chunk = os.pread(fd, min(chunk_bytes, budget) if budget > 0 else chunk_bytes, pos)
        if not chunk:
            break
        budget -= len(chunk)
        scan.feed(chunk, pos)
        pos += len(chunk)
    # A partial line is held back: the next call starts at its beginning.
    end = pos if scan.skip_from is not None else scan.line_start
    return LinesRead(
        lines=scan.lines,
        offset=end,
        inode=inode,
        reset=reset,
        oversized=len(scan.skipped),
        skipped=scan.skipped,
        skip_from=scan.skip_from,
        more=more,
    )


@dataclass(slots=True)
class _Scan:
    """One read's lines, fed chunk by chunk; a line may span chunks (carried) or be too long to
    ever return (skipped to its newline without being held)."""

    max_line_bytes: int
    line_start: int  # where the current incomplete line starts
    skip_from: int | None  # inside an oversized line that started here
    lines: list[tuple[int, bytes]] = field(default_factory=list)
    skipped: list[tuple[int, int]] = field(default_factory=list)
    carry: list[bytes] = field(default_factory=list)  # pieces of the current incomplete line
    carry_len: int = 0

    def empty_handed(self) -> bool:
        """Nothing to return yet but the start of a line still within max_line_bytes."""
        return not self.lines and not self.skipped and self.skip_from is None

    def feed(self, chunk: bytes, base: int) -> None:
        """`chunk` is the file's bytes from offset `base`."""
        start = self._leave_oversized(chunk, base)
        if start is None:
            return  # still inside the oversized line: the chunk is dropped
        start = self._end_carried(chunk, base, start)
        start = self._whole_lines(chunk, base, start)
        self._hold(chunk[start:])

    def _leave_oversized(self, chunk: bytes, base: int) -> int | None:
        """Where the chunk's bytes after an oversized line start (0 when not in one), or None
        when the whole chunk is inside it."""
        if self.skip_from is None:
            return 0
        nl = chunk.find(b"\n")
        if nl < 0:
            return None
        self.skipped.append((self.skip_from, base + nl - self.skip_from))
        self.skip_from = None
        self.line_start = base + nl + 1
        return nl + 1

    def _end_carried(self, chunk: bytes, base: int, start: int) -> int:
        """The line begun in an earlier chunk, when it ends in this one."""
        nl = chunk.find(b"\n", start)
        if nl < 0 or not self.carry:
            return start
        self.carry.append(chunk[start:nl])
        self._emit(self.line_start, b"".join(self.carry))
        self.carry, self.carry_len = [], 0
        self.line_start = base + nl + 1
        return nl + 1

    def _whole_lines(self, chunk: bytes, base: int, start: int) -> int:
        """The lines that start and end in this chunk."""
        last_nl = chunk.rfind(b"\n")
        if last_nl < start:
            return start
        at = base + start
        for raw in chunk[start:last_nl].split(b"\n"):
            self._emit(at, raw)
            at += len(raw) + 1
        self.line_start = base + last_nl + 1
        return last_nl + 1

    def _hold(self, tail: bytes) -> None:
        """The chunk's last bytes, a line not ended yet: carried, or skipped when too long to
        ever return (forgotten, and skipped to its newline)."""
        if not tail:
            return
        if self.carry_len + len(tail) > self.max_line_bytes:
            self.skip_from = self.line_start
            self.carry, self.carry_len = [], 0
        else:
            self.carry.append(tail)
            self.carry_len += len(tail)

    def _emit(self, start: int, raw: bytes) -> None:
        if len(raw) > self.max_line_bytes:
            self.skipped.append((start, len(raw)))
        else:
            self.lines.append((start, raw))
