"""Reads of a run's transcript through the provider, with an in-process index.

lab stores no messages; this keeps only cursors. Every CHECKPOINT messages the index keeps the
cursor that reached them, so a page anywhere in a 100,000-message transcript is read from the
nearest checkpoint instead of from byte 0, and the newest messages are kept in a bounded tail.
After the first read only appended bytes are parsed.

The first read of a big file (over COLD_TAIL_BYTES) does not parse it all before answering: the
index starts at a line boundary COLD_TAIL_BYTES before the end, numbering from there in an epoch
of its own (the epoch names the offset, so no page mixes its seqs with another numbering), and
a background thread parses the whole file into a full index that then replaces it. The pages
and sockets showing the provisional epoch are re-rendered in the full one, as after a clear.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from providers.base import AgentProvider, SideTranscripts
from providers.errors import TranscriptUnreadable
from providers.safefile import open_regular
from providers.schema import Cursor, Dialog, Message, MessageKind, RunState, TranscriptRead
from runs.models import Run

CHECKPOINT = 256
TAIL = 200
PAGE = 60
MAX_INDEXES = 128
# A first read of a file bigger than twice this opens on its last COLD_TAIL_BYTES (about 30 ms of
# parsing at the synthetic benchmark's density) while the whole file is indexed in the background.
COLD_TAIL_BYTES = 1024 * 1024
# The background index of a big file waits this long before parsing, so the request that made
# the provisional index answers first (bench: cold open of 100,000 messages).
FULL_INDEX_DELAY_S = 0.2
# A page asking for what lies before a provisional index's start waits at most this long for
# the background index (it holds a request thread meanwhile; 155 MB took 2.4 s in bench/).
FULL_INDEX_WAIT_S = 10.0


def epoch_of(path: str) -> str:
    """A short stable id for one transcript identity (a clear starts a new one)."""
    return hashlib.blake2s(path.encode(), digest_size=5).hexdigest()


@dataclass(frozen=True)
class Tail:
    path: str
    epoch: str
    messages: list[Message]
    state: RunState
    dialog: Dialog | None
    next_seq: int
    head_unread: bool = False  # a provisional index: the file has messages before seq 0
    background: tuple[str, ...] = ()  # what the agent still runs in the background
    since: str = ""  # while working: when the turn began
    running: str = ""  # while working: the tool it waits on
    queued: tuple[str, ...] = ()  # prompts the CLI queued while working, not yet sent on
    last: Message | None = None  # the transcript's last message, whatever `limit` was asked

    @property
    def has_earlier(self) -> bool:
        return bool(self.messages) and (self.messages[0].seq > 0 or self.head_unread)


class TranscriptIndex:
    def __init__(self, provider: AgentProvider, path: str, start: Cursor | None = None) -> None:
        self.provider = provider
        self.path = path
        self.lock = threading.Lock()
        # `start`: a cursor at a line boundary inside the file, seq 0 there (a provisional index
        # of the file's end); its offset is part of the epoch.
        self.cursor = start or Cursor(path=path)
        self.origin = self.cursor.offset
        self.checkpoints: list[Cursor] = [self.cursor]
        self.tail: deque[Message] = deque(maxlen=TAIL)
        self.state = RunState.IDLE
        self.dialog: Dialog | None = None
        self.background: tuple[str, ...] = ()
        self.since = self.running = ""
        self.queued: tuple[str, ...] = ()
        self.generation = 0  # bumped when the file was truncated or replaced under the reader
        self.error = ""

    @property
    def epoch(self) -> str:
        base = epoch_of(self.path)
        if self.origin:
            base = f"{base}t{self.origin:x}"
        return f"{base}g{self.generation}" if self.generation else base

    @property
    def head_unread(self) -> bool:
        """Provisional: what comes before the first checkpoint was never read (a reset reads
        the replacing file from byte 0, so it clears this)."""
        return self.checkpoints[0].offset > 0

    def advance(self) -> bool:
        """Parse what was appended since the last call (only that). True when the file was
        truncated or replaced and the index started over."""
        with self.lock:
            reset = False
            while True:
                before = self.cursor.offset
                try:
                    read = self.provider.read_transcript(self.path, self.cursor)
                except TranscriptUnreadable as exc:
                    # A symlink, FIFO or other non-file where the transcript should be: shown on
                    # the page, never followed, never fatal to the page or the watcher.
                    self.error = str(exc)
                    return reset
                self._apply(read)
                reset = reset or read.reset
                if (read.cursor.offset == before and not read.reset) or read.cursor.offset == 0:
                    break  # nothing more appended (a reader with a byte budget may need several calls)
            return reset

    def advance_small(self, max_bytes: int) -> bool:
        """For a caller on the event loop: parse what was appended, if that is at most
        `max_bytes` of the same file, without waiting for the lock. True when the index has
        read all of it; False when it did not (the lock is busy, more is pending, the file was
        replaced, truncated or is unreadable, the index never read it): advance() in a thread
        then does the rest, from wherever this stopped."""
        if not self.lock.acquire(blocking=False):
            return False
        try:
            if self.error or not self.cursor.inode:
                return False
            try:
                st = os.lstat(self.path)
            except OSError:
                return False
            pending = st.st_size - self.cursor.offset
            if (
                not stat.S_ISREG(st.st_mode)
                or st.st_ino != self.cursor.inode
                or not 0 <= pending <= max_bytes
            ):
                return False
            if pending == 0:
                return True
            try:
                read = self.provider.read_transcript(self.path, self.cursor)
            except TranscriptUnreadable:
                return False
            self._apply(read)
            return not read.reset
        finally:
            self.lock.release()

    def _apply(self, read: TranscriptRead) -> None:
        self.error = ""
        if read.reset:
            self.generation += 1
            self.tail.clear()
            self.checkpoints = [Cursor(path=self.path)]
        self._absorb(read.messages, read.cursor)
        self.cursor = read.cursor
        self.state, self.dialog, self.background = read.state, read.dialog, read.background
        self.since, self.running = read.since, read.running
        self.queued = read.queued

    def _absorb(self, messages: list[Message], end: Cursor) -> None:
        self.tail.extend(messages)
        last_checkpoint = self.checkpoints[-1].next_seq
        if end.next_seq - last_checkpoint >= CHECKPOINT:
            self.checkpoints.append(end)

    def recent(self, after_seq: int, limit: int, *, blocking: bool = True) -> list[Message]:
        """The newest `limit` tail messages with seq > after_seq (from memory); without
        `blocking` (on the event loop), none while another thread holds the index."""
        if not self.lock.acquire(blocking=blocking):
            return []
        try:
            return [m for m in self.tail if m.seq > after_seq][-limit:]
        finally:
            self.lock.release()

    def gap_in_memory(self, epoch: str, after_seq: int, upto_seq: int) -> list[Message] | None:
        """The messages after `after_seq`, from memory, without blocking and without a read:
        only when this index is at `epoch`, has read at least up to `upto_seq` (a next_seq,
        e.g. the one a watcher announced) and its tail still holds the whole gap. None when
        only a read can answer (the index is busy, behind, reset, or in error)."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            next_seq = self.cursor.next_seq
            if self.error or self.epoch != epoch or next_seq < upto_seq:
                return None
            if after_seq + 1 >= next_seq:
                return []
            if not self.tail or self.tail[0].seq > after_seq + 1:
                return None
            return [m for m in self.tail if m.seq > after_seq]
        finally:
            self.lock.release()

    def messages_between(self, start_seq: int, stop_seq: int) -> list[Message]:
        """Messages with start_seq <= seq < stop_seq, read from the nearest checkpoint."""
        with self.lock:
            if self.tail and self.tail[0].seq <= start_seq:
                return [m for m in self.tail if start_seq <= m.seq < stop_seq]
            cursor = self.checkpoints[0]
            for cp in self.checkpoints:
                if cp.next_seq <= start_seq:
                    cursor = cp
            end = self.cursor.offset
        out: list[Message] = []
        while cursor.offset < end:
            read = self.provider.read_transcript(self.path, cursor)
            if read.reset or read.cursor.offset == cursor.offset:
                break
            out.extend(m for m in read.messages if start_seq <= m.seq < stop_seq)
            if read.messages and read.messages[-1].seq >= stop_seq:
                break
            cursor = read.cursor
        return out


_indexes: OrderedDict[str, TranscriptIndex] = OrderedDict()
_indexes_guard = threading.Lock()


def transcript_index(
    run: Run, path: str | None = None, *, provider: AgentProvider | None = None
) -> TranscriptIndex:
    """The run's index of `path` (located when not given), made on first use. `provider`: the
    run's, when the caller has already resolved it."""
    provider = provider or run.provider
    path = path or current_path(run, provider=provider)
    with _indexes_guard:
        index = _indexes.get(path)
        if index is not None and index.provider is provider:  # a settings override swaps providers
            _indexes.move_to_end(path)
            return index
    start = _cold_start(path)
    with _indexes_guard:
        index = _indexes.get(path)
        if index is None or index.provider is not provider:
            index = _indexes[path] = TranscriptIndex(provider, path, start)
            if start is not None:
                _full[path] = _background.submit(_index_fully, provider, path, index)
        _indexes.move_to_end(path)
        _evict()
    return index


def _evict() -> None:
    """Drop the least recently used indexes that no watcher pins, down to MAX_INDEXES of them.
    (With more live runs than MAX_INDEXES and no pins, each run's wake evicted the next run's
    index, round robin, and every wake read its transcript again from the start.)"""
    unpinned = [path for path in _indexes if not _pinned.get(path)]
    for path in unpinned[: max(0, len(unpinned) - MAX_INDEXES)]:
        del _indexes[path]


# Paths whose index a live run's watcher holds (a count per path): never evicted, so however
# many runs are live each keeps its index, and MAX_INDEXES bounds the others.
_pinned: dict[str, int] = {}


def pin(path: str) -> None:
    with _indexes_guard:
        _pinned[path] = _pinned.get(path, 0) + 1


def unpin(path: str) -> None:
    with _indexes_guard:
        left = _pinned.get(path, 0) - 1
        if left > 0:
            _pinned[path] = left
        else:
            _pinned.pop(path, None)
        _evict()


def _cold_start(path: str) -> Cursor | None:
    """Where a first read of a big file starts: the first line boundary COLD_TAIL_BYTES before
    its end. None for a smaller file (read whole), or one that cannot be looked at here (the
    reader reports it)."""
    try:
        with open_regular(path) as (fd, st):  # a FIFO planted where the transcript should be must not hang
            if st.st_size <= 2 * COLD_TAIL_BYTES:
                return None
            at = st.st_size - COLD_TAIL_BYTES
            while at < st.st_size:
                chunk = os.pread(fd, 64 * 1024, at)
                if not chunk:
                    return None
                nl = chunk.find(b"\n")
                if nl >= 0:
                    return Cursor(path=path, offset=at + nl + 1, inode=st.st_ino, next_seq=0)
                at += len(chunk)
            return None  # one line fills the window: read the file whole
    except OSError:
        return None


# One thread parses big files whole in the background, one at a time.
_background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lab-index")
_full: dict[str, Future[None]] = {}


def _index_fully(provider: AgentProvider, path: str, provisional: TranscriptIndex) -> None:
    """Parse the whole file into a full index and put it in the provisional one's place (unless
    something else replaced or dropped that meanwhile), then tell whoever listens. It starts
    after the page that asked has been answered from the provisional index: parsing alongside,
    it took half the GIL from that answer."""
    try:
        time.sleep(FULL_INDEX_DELAY_S)
        full = TranscriptIndex(provider, path)
        full.advance()
        with _indexes_guard:
            if _indexes.get(path) is not provisional:
                return
            _indexes[path] = full
        for listener in list(on_full_index):
            listener(path)
    finally:
        with _indexes_guard:
            _full.pop(path, None)


# Called (from the background thread) with a path whose full index replaced a provisional one.
on_full_index: list[Callable[[str], None]] = []


def wait_full_index(path: str, timeout: float = FULL_INDEX_WAIT_S) -> None:
    """Block until the background index of `path`, if one is being built, is in place."""
    with _indexes_guard:
        pending = _full.get(path)
    if pending is not None:
        with contextlib.suppress(TimeoutError):
            pending.result(timeout)


def indexed(path: str) -> TranscriptIndex | None:
    """This process's index of `path` if there is one (never creates or reads)."""
    with _indexes_guard:
        return _indexes.get(path)


def current_path(run: Run, *, provider: AgentProvider | None = None) -> str:
    if not run.transcript_path:
        return ""
    return (provider or run.provider).locate_transcript(run.handle())


def transcript_tail(
    run: Run, limit: int = PAGE, *, path: str | None = None, provider: AgentProvider | None = None
) -> Tail:
    """The transcript's last `limit` messages and what it says now, its index advanced first.
    `path`: where a caller already knows the transcript is (a watcher's event carried it), so it
    is not located again; `provider`: the run's, when the caller has already resolved it."""
    if path is None:
        path = current_path(run, provider=provider)
    if not path:
        return Tail(path="", epoch="", messages=[], state=RunState.IDLE, dialog=None, next_seq=0)
    index = transcript_index(run, path, provider=provider)
    index.advance()
    return tail_of(index, limit)


def tail_of(index: TranscriptIndex, limit: int) -> Tail:
    """What an advanced index says now, with its last `limit` messages (none: 0)."""
    messages = list(index.tail)[-limit:] if limit > 0 else []
    if index.error and limit > 0:
        messages.append(
            Message(seq=index.cursor.next_seq, kind=MessageKind.LIFECYCLE, text=index.error, is_error=True)
        )
    return Tail(
        path=index.path,
        epoch=index.epoch,
        messages=messages,
        state=index.state,
        dialog=index.dialog,
        next_seq=index.cursor.next_seq,
        last=index.tail[-1] if index.tail else None,
        head_unread=index.head_unread,
        background=index.background,
        since=index.since,
        running=index.running,
        queued=index.queued,
    )


@dataclass(frozen=True)
class Page:
    epoch: str
    messages: list[Message]
    has_earlier: bool


def transcript_page(run: Run, *, before_seq: int, limit: int = PAGE, epoch: str | None = None) -> Page | None:
    """The `limit` messages before `before_seq`, in the numbering of `epoch` (when given). None
    when that is not the current numbering any more, so the asking page must be re-rendered:
    the file was cleared, truncated or replaced, or a provisional index of a big file was
    replaced by its full one — which a page asking for what lies before the provisional start
    waits for here."""
    path = current_path(run)
    index = transcript_index(run, path)
    if epoch is not None and index.epoch != epoch:
        return None
    if index.head_unread and before_seq <= 0:
        wait_full_index(path)
        return None
    messages = index.messages_between(max(0, before_seq - limit), before_seq)
    if epoch is not None and index.epoch != epoch:  # reset while reading
        return None
    has_earlier = bool(messages) and (messages[0].seq > 0 or index.head_unread)
    return Page(epoch=index.epoch, messages=messages, has_earlier=has_earlier)


SIDE_MAX_MESSAGES = 2000


@dataclass(frozen=True)
class Side:
    path: str
    epoch: str
    messages: list[Message]
    state: RunState
    truncated: bool


def side_transcript(run: Run, side: str) -> Side | None:
    """A side conversation the run's transcript names (a background agent's own transcript),
    read through from the start with the same reader; None when the provider knows none."""
    provider = run.provider
    if not isinstance(provider, SideTranscripts) or not run.transcript_path:
        return None
    path = provider.side_transcript(run.handle(), side)
    if not path:
        return None
    cursor, state = Cursor(path=path), RunState.IDLE
    messages: list[Message] = []
    while len(messages) < SIDE_MAX_MESSAGES:
        try:
            read = provider.read_transcript(path, cursor)
        except TranscriptUnreadable:
            return None
        messages += read.messages
        state = read.state
        if read.cursor.offset == cursor.offset:
            break
        cursor = read.cursor
    return Side(
        path=path,
        epoch=epoch_of(path),
        messages=messages[:SIDE_MAX_MESSAGES],
        state=state,
        truncated=len(messages) >= SIDE_MAX_MESSAGES,
    )
