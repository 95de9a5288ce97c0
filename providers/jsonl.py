"""Incremental reading of an append-only JSONL file, by bytes.

Generic: no Django, no knowledge of any agent CLI. A caller keeps (offset, inode, skip_from)
between calls; each call reads only what was appended since, holds back a partial last line,
and detects truncation or replacement. Memory per call is bounded by `max_bytes` (the lines it
returns) no matter how large the file is; a line longer than `max_line_bytes` is skipped
without ever being held whole.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field

from providers.errors import TranscriptUnreadable

DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # per call: a 100 MB file is read over several calls
DEFAULT_CHUNK_BYTES = 1024 * 1024

_OPEN_FLAGS = (
    os.O_RDONLY
    | os.O_NOFOLLOW  # a symlink could point lab at any file on the machine
    | os.O_NONBLOCK  # opening a FIFO must not block waiting for a writer
    | getattr(os, "O_CLOEXEC", 0)
)


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
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return LinesRead(lines=[], offset=0, inode=0, reset=offset > 0 or inode != 0)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise TranscriptUnreadable(f"Refusing to follow a symlink: {path}") from None
        raise TranscriptUnreadable(f"Cannot open the transcript {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TranscriptUnreadable(f"The transcript is not a regular file: {path}")
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
            # The budget must exceed one line, or a long line could never complete.
            max_bytes=max(max_bytes, max_line_bytes + 1),
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
    lines: list[tuple[int, bytes]] = []
    skipped: list[tuple[int, int]] = []
    carry: list[bytes] = []  # pieces of the current incomplete line
    carry_len = 0
    line_start = offset  # where the current incomplete line starts
    pos = offset  # file position of the next byte to read
    budget = max_bytes
    more = False
    while True:
        if budget <= 0:
            more = True
            break
        chunk = os.pread(fd, min(chunk_bytes, budget), pos)
        if not chunk:
            break
        budget -= len(chunk)
        base = pos
        pos += len(chunk)
        start = 0  # index in chunk of the first byte not yet assigned to a line
        if skip_from is not None:
            nl = chunk.find(b"\n")
            if nl < 0:
                continue  # still inside the oversized line: drop the chunk
            skipped.append((skip_from, base + nl - skip_from))
            skip_from = None
            start = nl + 1
            line_start = base + start
        nl = chunk.find(b"\n", start)
        if nl >= 0 and carry:
            # The line begun in an earlier chunk ends here.
            carry.append(chunk[start:nl])
            _emit(lines, skipped, line_start, b"".join(carry), max_line_bytes)
            carry, carry_len = [], 0
            start = nl + 1
            line_start = base + start
            nl = chunk.find(b"\n", start)
        if nl >= 0:
            last_nl = chunk.rfind(b"\n")
            at = base + start
            for raw in chunk[start:last_nl].split(b"\n"):
                _emit(lines, skipped, at, raw, max_line_bytes)
                at += len(raw) + 1
            start = last_nl + 1
            line_start = base + start
        tail = len(chunk) - start
        if tail:
            if carry_len + tail > max_line_bytes:
                # Too long to ever return: forget it and skip to its newline.
                skip_from = line_start
                carry, carry_len = [], 0
            else:
                carry.append(chunk[start:])
                carry_len += tail
    # A partial line is held back: the next call starts at its beginning.
    end = pos if skip_from is not None else line_start
    return LinesRead(
        lines=lines,
        offset=end,
        inode=inode,
        reset=reset,
        oversized=len(skipped),
        skipped=skipped,
        skip_from=skip_from,
        more=more,
    )


def _emit(
    lines: list[tuple[int, bytes]],
    skipped: list[tuple[int, int]],
    start: int,
    raw: bytes,
    max_line_bytes: int,
) -> None:
    if len(raw) > max_line_bytes:
        skipped.append((start, len(raw)))
    else:
        lines.append((start, raw))
