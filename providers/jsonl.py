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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, Unpack

import orjson

from providers.errors import TranscriptUnreadable
from providers.safefile import UnsafeFile, open_fd
from providers.schema import Cursor, Message, MessageKind, RunState, TranscriptRead

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


# --- an adapter's transcript reader, the plumbing ------------------------------------------------


class LineReader:
    """The plumbing every adapter's transcript reader shares: numbering the messages, counting,
    warning about a line it skips, decoding each line and handing the object to `entry`. A
    subclass (a dataclass holding its own state) defines `entry`, and may skip a line before
    it is decoded (`skip`: bookkeeping the conversation never shows)."""

    seq: int
    corrupt: int
    messages: list[Message]
    stats: dict[str, int]

    def entry(self, e: dict[str, Any]) -> None:
        raise NotImplementedError

    def skip(self, raw: bytes) -> bool:
        return False

    def emit(self, kind: MessageKind, text: str, **fields: Any) -> None:
        self.messages.append(Message(seq=self.seq, kind=kind, text=text, **fields))
        self.seq += 1

    def count(self, stat: str) -> None:
        self.stats[stat] = self.stats.get(stat, 0) + 1

    def feed(self, read: LinesRead) -> None:
        if not read.skipped:
            for start, raw in read.lines:
                self.line(start, raw)
            return
        # Rare: interleave the oversized-line warnings at their place in the file.
        events: list[tuple[int, bytes | None, int]] = [(s, r, 0) for s, r in read.lines]
        events += [(s, None, n) for s, n in read.skipped]
        events.sort(key=lambda ev: ev[0])
        for at, data, size in events:
            if data is None:
                self.oversized_line(at, size)
            else:
                self.line(at, data)

    def oversized_line(self, start: int, size: int) -> None:
        self.count("oversized")
        self.warn(f"skipped an oversized transcript line ({size} bytes)", start)

    def warn(self, text: str, start: int) -> None:
        self.emit(MessageKind.LIFECYCLE, text, native_id=f"line@{start}", is_error=True)

    def line(self, start: int, raw: bytes) -> None:
        if not raw or raw.isspace() or self.skip(raw):
            return
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            entry = None
        if not isinstance(entry, dict):
            self.unreadable(start, len(raw))
            return
        try:
            self.entry(entry)
        except (TypeError, AttributeError, ValueError, KeyError):
            # A shape the pinned CLI never writes: keep reading rather than stall the run.
            self.unreadable(start, len(raw))

    def unreadable(self, start: int, size: int) -> None:
        self.corrupt += 1
        self.count("corrupt")
        self.warn(f"skipped an unreadable transcript line ({size} bytes)", start)


class ReaderState(Protocol):
    """What an adapter's carried state (Cursor.provider_state) holds for the plumbing."""

    @property
    def skip_from(self) -> int | None: ...


class FreezingReader(Protocol):
    seq: int
    state: RunState
    since: str
    messages: list[Message]
    stats: dict[str, int]

    def feed(self, read: LinesRead) -> None: ...

    def freeze(self, skip_from: int | None) -> object: ...


@dataclass(slots=True)
class Passes[R: FreezingReader]:
    """A read_in_passes result: the reader after every line read, and where the file stands."""

    reader: R
    path: str
    offset: int
    inode: int
    skip_from: int | None
    reset: bool
    start_offset: int

    def cursor(self) -> Cursor:
        return Cursor(
            path=self.path,
            offset=self.offset,
            inode=self.inode,
            next_seq=self.reader.seq,
            provider_state=self.reader.freeze(self.skip_from),
        )

    def transcript_read(self, running: str, **more: Any) -> TranscriptRead:
        """The read as the seam returns it: since and running only while the turn works."""
        working = self.reader.state == RunState.WORKING
        return TranscriptRead(
            messages=self.reader.messages,
            cursor=self.cursor(),
            state=self.reader.state,
            since=self.reader.since if working else "",
            running=running if working else "",
            reset=self.reset,
            stats=self.reader.stats,
            **more,
        )


class Limits(TypedDict, total=False):
    """read_in_passes' bounds, as an adapter's read_transcript takes them."""

    max_line_bytes: int
    max_bytes: int
    max_passes: int | None


def read_in_passes[S: ReaderState, R: FreezingReader](
    path: str,
    cursor: Cursor,
    initial: Callable[[], S],
    start: Callable[[S, int], R],
    **limits: Unpack[Limits],
) -> Passes[R]:
    """Read `path` on from `cursor` into a reader `start(state, seq)`, carrying the adapter's
    state (`initial()` is a fresh one, of the type the cursor must carry): a new path or a
    truncated or replaced file restarts from 0 with a fresh state. Pass after pass of
    `max_bytes`, up to `max_passes` (the cursor then says where it stopped)."""
    fresh = bool(cursor.path) and cursor.path != path
    empty = initial()
    carried = cursor.provider_state
    st: S = carried if isinstance(carried, type(empty)) and not fresh else empty
    offset, inode, seq = (0, 0, 0) if fresh else (cursor.offset, cursor.inode, cursor.next_seq)
    reader = start(st, seq)
    reset, skip_from, start_offset, passes = fresh, st.skip_from, offset, 0
    max_line_bytes = limits.get("max_line_bytes", DEFAULT_MAX_LINE_BYTES)
    max_bytes = limits.get("max_bytes", DEFAULT_MAX_BYTES)
    max_passes = limits.get("max_passes")
    while True:  # the byte budget bounds each pass; a 100 MB file takes several
        passes += 1
        read = read_lines(path, offset, inode, max_line_bytes, skip_from=skip_from, max_bytes=max_bytes)
        if read.reset:
            reset, start_offset = True, 0
            reader = start(initial(), 0)
        reader.feed(read)
        offset, inode, skip_from = read.offset, read.inode, read.skip_from
        if not read.more or (max_passes is not None and passes >= max_passes):
            break
    return Passes(reader, path, offset, inode, skip_from, reset, start_offset)
