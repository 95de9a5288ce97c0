"""Reads of a run's transcript through the provider, with an in-process index.

lab stores no messages; this keeps only cursors. Every CHECKPOINT messages the index keeps the
cursor that reached them, so a page anywhere in a 100,000-message transcript is read from the
nearest checkpoint instead of from byte 0, and the newest messages are kept in a bounded tail.
The first read of a file parses it once; after that only appended bytes are parsed.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass

from providers.base import AgentProvider
from providers.errors import TranscriptUnreadable
from providers.registry import get_provider
from providers.schema import Cursor, Dialog, Message, MessageKind, RunState, TranscriptRead
from runs.models import Run

CHECKPOINT = 256
TAIL = 200
PAGE = 60
MAX_INDEXES = 128


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

    @property
    def has_earlier(self) -> bool:
        return bool(self.messages) and self.messages[0].seq > 0


class TranscriptIndex:
    def __init__(self, provider: AgentProvider, path: str) -> None:
        self.provider = provider
        self.path = path
        self.lock = threading.Lock()
        self.cursor = Cursor(path=path)
        self.checkpoints: list[Cursor] = [self.cursor]
        self.tail: deque[Message] = deque(maxlen=TAIL)
        self.state = RunState.IDLE
        self.dialog: Dialog | None = None
        self.generation = 0  # bumped when the file was truncated or replaced under the reader
        self.error = ""

    @property
    def epoch(self) -> str:
        base = epoch_of(self.path)
        return f"{base}g{self.generation}" if self.generation else base

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
        self.state, self.dialog = read.state, read.dialog

    def _absorb(self, messages: list[Message], end: Cursor) -> None:
        self.tail.extend(messages)
        last_checkpoint = self.checkpoints[-1].next_seq
        if end.next_seq - last_checkpoint >= CHECKPOINT:
            self.checkpoints.append(end)

    def recent(self, after_seq: int, limit: int) -> list[Message]:
        """The newest `limit` tail messages with seq > after_seq (from memory)."""
        with self.lock:
            return [m for m in self.tail if m.seq > after_seq][-limit:]

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
            cursor = Cursor(path=self.path)
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


def transcript_index(run: Run, path: str | None = None) -> TranscriptIndex:
    provider = get_provider(run.provider_id)
    path = path or current_path(run)
    with _indexes_guard:
        index = _indexes.get(path)
        if index is None or index.provider is not provider:  # a settings override swaps providers
            index = _indexes[path] = TranscriptIndex(provider, path)
        _indexes.move_to_end(path)
        while len(_indexes) > MAX_INDEXES:
            _indexes.popitem(last=False)
    return index


def indexed(path: str) -> TranscriptIndex | None:
    """This process's index of `path` if there is one (never creates or reads)."""
    with _indexes_guard:
        return _indexes.get(path)


def current_path(run: Run) -> str:
    from runs.services import run_handle

    if not run.transcript_path:
        return ""
    return get_provider(run.provider_id).locate_transcript(run_handle(run))


def transcript_tail(run: Run, limit: int = PAGE) -> Tail:
    path = current_path(run)
    if not path:
        return Tail(path="", epoch="", messages=[], state=RunState.IDLE, dialog=None, next_seq=0)
    index = transcript_index(run, path)
    index.advance()
    messages = list(index.tail)[-limit:]
    if index.error:
        messages.append(
            Message(seq=index.cursor.next_seq, kind=MessageKind.LIFECYCLE, text=index.error, is_error=True)
        )
    return Tail(
        path=path,
        epoch=index.epoch,
        messages=messages,
        state=index.state,
        dialog=index.dialog,
        next_seq=index.cursor.next_seq,
    )


def transcript_page(run: Run, *, before_seq: int, limit: int = PAGE) -> list[Message]:
    index = transcript_index(run)
    return index.messages_between(max(0, before_seq - limit), before_seq)
