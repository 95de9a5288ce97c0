"""A run's tmux pane as a live byte stream, through tmux's control mode. No Django.

One control client (`tmux -C attach-session -f read-only,ignore-size`) per pane per process,
shared by every viewer in the process. tmux sends the pane's output as `%output` notifications
and answers commands written to the client's stdin in `%begin`/`%end` blocks, in one ordered
stream: a snapshot taken by `capture-pane` through the same client sits at an exact place among
the output, so a viewer that starts from it misses nothing and sees nothing twice.

`ignore-size` keeps the client out of the window's size: the pane keeps the size lab gave it,
whoever watches. Keys go through the same client (`send-keys -H`, the bytes as the browser's
terminal produced them), so they never appear on a command line.

Output is coalesced per frame (FRAME_S) for every viewer at once. A viewer that falls more than
VIEWER_MAX_BYTES behind is dropped to a fresh snapshot instead of being fed the backlog.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from providers.tmux import TMUX, check_name

log = logging.getLogger(__name__)

FRAME_S = 1 / 30  # output is sent at most this often per pane
VIEWER_MAX_BYTES = 1024 * 1024  # a viewer further behind than this gets a snapshot instead
COMMAND_TIMEOUT_S = 10.0
KEYS_MAX_BYTES = 16 * 1024  # one keys message; more is refused, not cut
_ESCAPED = re.compile(rb"\\([0-7]{3})")
# What the snapshot asks tmux for, besides the screen's text (capture-pane): the pane's size,
# the cursor, and the modes a terminal must be in to show and send what the TUI expects.
STATE_FORMAT = (
    "#{pane_id} #{pane_width} #{pane_height} #{cursor_x} #{cursor_y} #{cursor_flag} "
    "#{alternate_on} #{keypad_cursor_flag} #{keypad_flag} #{pane_dead}"
)


def decode_output(value: bytes) -> bytes:
    """A `%output` value: tmux escapes bytes below 32 and the backslash as `\\ooo` (octal)."""
    return _ESCAPED.sub(lambda m: bytes([int(m.group(1), 8)]), value)


@dataclass(frozen=True)
class PaneState:
    pane_id: str
    width: int
    height: int
    cursor_x: int
    cursor_y: int
    cursor_shown: bool
    alternate: bool
    app_cursor_keys: bool
    app_keypad: bool
    dead: bool

    @classmethod
    def parse(cls, line: str) -> PaneState:
        f = line.split()
        if len(f) != 10 or not f[0].startswith("%"):
            raise ValueError(f"unexpected pane state {line!r}")
        n = [int(x) for x in f[1:]]
        return cls(f[0], n[0], n[1], n[2], n[3], n[4] == 1, n[5] == 1, n[6] == 1, n[7] == 1, n[8] == 1)


@dataclass(frozen=True)
class Snapshot:
    state: PaneState
    screen: bytes  # bytes for a terminal of the pane's size: draws the screen as tmux has it

    @classmethod
    def build(cls, state: PaneState, captured: list[bytes]) -> Snapshot:
        """A reset terminal, then the captured rows (with their colours), then the cursor and
        the modes where tmux has them."""
        rows = captured[: state.height]
        out = bytearray(b"\x1bc")  # full reset: the viewer's terminal starts from nothing
        if state.alternate:
            out += b"\x1b[?1049h"
        out += b"\x1b[H\x1b[2J"
        out += b"\x1b[0m\r\n".join(rows) + b"\x1b[0m"
        out += b"\x1b[%d;%dH" % (state.cursor_y + 1, state.cursor_x + 1)
        out += b"\x1b[?1h" if state.app_cursor_keys else b"\x1b[?1l"
        out += b"\x1b=" if state.app_keypad else b"\x1b>"
        out += b"\x1b[?25h" if state.cursor_shown else b"\x1b[?25l"
        return cls(state, bytes(out))


@dataclass(eq=False)
class Viewer:
    """One page's share of the stream: output waits here until the page's socket sends it."""

    chunks: deque[bytes] = field(default_factory=deque)
    size: int = 0
    behind: bool = False
    ended: bool = False
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def offer(self, data: bytes) -> None:
        if self.behind:
            return
        if self.size + len(data) > VIEWER_MAX_BYTES:
            # Too slow for this pane: drop what waits, and start it again from a snapshot.
            self.chunks.clear()
            self.size = 0
            self.behind = True
        else:
            self.chunks.append(data)
            self.size += len(data)
        self.ready.set()

    def take(self) -> bytes:
        data = b"".join(self.chunks)
        self.chunks.clear()
        self.size = 0
        self.ready.clear()
        return data


class StreamClosed(Exception):
    """The pane's session is gone (or tmux is): nothing more will come."""


@dataclass
class _Pending:
    future: asyncio.Future[list[bytes]]
    on_done: Callable[[list[bytes]], None] | None = None
    blocks: int = 1  # commands on the line: tmux answers each in its own block
    lines: list[bytes] = field(default_factory=list)


class PaneStream:
    def __init__(self, socket: str, session: str) -> None:
        self.socket, self.session = check_name(socket), check_name(session)
        self.viewers: set[Viewer] = set()
        self.pane_id = ""
        self.closed = False
        self._proc: asyncio.subprocess.Process | None = None
        self._pending: deque[_Pending] = deque()
        self._block: list[bytes] | None = None
        self._out = bytearray()
        self._tasks: list[asyncio.Task[None]] = []
        self.bytes_seen = 0  # output bytes read from tmux (the bench reads it)
        self._closing = False  # close() detached the client itself

    async def start(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(
            TMUX, "-L", self.socket, "-f", "/dev/null", "-C",
            "attach-session", "-f", "read-only,ignore-size", "-t", f"={self.session}",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=8 * 1024 * 1024,
        )  # fmt: skip
        self._tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._flush())]
        lines = await self.command(f"display-message -p -t ={self.session}: '{STATE_FORMAT}'")
        self.pane_id = _parse_state(lines).pane_id

    async def close(self) -> None:
        """Detach the client and reap it; the reader ends on its EOF."""
        proc = self._proc
        self._closing = True  # the client's end is lab's doing, not tmux's
        if proc is not None:
            if proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.close()  # detaches the client
            try:
                await asyncio.wait_for(proc.wait(), 2.0)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        reader, others = (self._tasks[0], self._tasks[1:]) if self._tasks else (None, [])
        for task in others:
            task.cancel()
        if reader is not None:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(reader, 2.0)
        for task in others:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._ended()

    async def command(
        self, *commands: str, on_done: Callable[[list[bytes]], None] | None = None
    ) -> list[bytes]:
        """Run tmux commands through the client, on one line (tmux runs them one after the
        other with no pane output between them); their output lines, in order with the pane's
        output (on_done runs at that exact place, before any later output is handled)."""
        if self.closed or self._proc is None or self._proc.stdin is None:
            raise StreamClosed("The terminal session is gone.")
        future: asyncio.Future[list[bytes]] = asyncio.get_running_loop().create_future()
        self._pending.append(_Pending(future, on_done, blocks=len(commands)))
        try:
            self._proc.stdin.write(" ; ".join(commands).encode() + b"\n")
            await self._proc.stdin.drain()
        except (ConnectionResetError, BrokenPipeError):
            self._ended()
            raise StreamClosed("The terminal session is gone.") from None
        try:
            return await asyncio.wait_for(future, COMMAND_TIMEOUT_S)
        except TimeoutError:
            raise StreamClosed("tmux did not answer in time.") from None

    async def subscribe(self, viewer: Viewer) -> Snapshot:
        """The pane's screen now, with `viewer` receiving every byte of output after it."""

        def joined(lines: list[bytes]) -> None:
            self._emit()  # output read before the snapshot goes to the earlier viewers only
            viewer.behind = False
            viewer.chunks.clear()
            viewer.size = 0
            self.viewers.add(viewer)

        # One line: the screen and the cursor read with no output between them, and the viewer
        # joined right there.
        target = f"={self.session}:"
        lines = await self.command(
            f"capture-pane -p -e -t {target}",
            f"display-message -p -t {target} '{STATE_FORMAT}'",
            on_done=joined,
        )
        return Snapshot.build(_parse_state(lines[-1:]), lines[:-1])

    def unsubscribe(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)

    async def send_keys(self, data: bytes) -> None:
        """The bytes as typed, to the pane (tmux's -H: one key per byte, none on a command line)."""
        if len(data) > KEYS_MAX_BYTES:
            raise ValueError(f"at most {KEYS_MAX_BYTES} bytes of keys at once")
        for start in range(0, len(data), 512):
            hexed = " ".join(f"{b:02x}" for b in data[start : start + 512])
            out = await self.command(f"send-keys -H -t {self.pane_id} {hexed}")
            if out and out[0].startswith(b"%error"):
                raise StreamClosed(out[0].decode(errors="replace"))

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            while line := await self._proc.stdout.readline():
                self._line(line.rstrip(b"\n"))
        except (asyncio.LimitOverrunError, ValueError):
            log.warning("terminal stream of %s: a line longer than the reader's limit", self.session)
        finally:
            if not self.closed and not self._closing:
                log.warning("terminal stream of %s: tmux's control client stopped writing", self.session)
            self._ended()

    def _line(self, line: bytes) -> None:
        if self._block is not None:
            if line.startswith((b"%end ", b"%error ")):
                block, self._block = self._block, None
                if line.startswith(b"%error "):
                    block = [b"%error " + b" ".join(block)]
                # The third field is 1 for a command this client sent (0: the attach itself).
                if line.rsplit(b" ", 1)[-1] == b"1" and self._pending:
                    pending = self._pending[0]
                    pending.lines += block
                    pending.blocks -= 1
                    if pending.blocks == 0:
                        self._pending.popleft()
                        if pending.on_done is not None:
                            pending.on_done(pending.lines)
                        if not pending.future.done():
                            pending.future.set_result(pending.lines)
                return
            self._block.append(line)
            return
        if line.startswith(b"%begin "):
            self._block = []
        elif line.startswith(b"%output "):
            _, pane, value = [*line.split(b" ", 2), b""][:3]
            if pane.decode() == self.pane_id:
                data = decode_output(value)
                self.bytes_seen += len(data)
                self._out += data
        elif line.startswith(b"%exit"):
            # tmux's own reason, if it gave one (e.g. "too far behind"): said in the log, so a
            # stream that ends under a page says why.
            log.info("terminal stream of %s: tmux ended it: %s", self.session, line.decode(errors="replace"))
            self._ended()

    async def _flush(self) -> None:
        while not self.closed:
            await asyncio.sleep(FRAME_S)
            self._emit()

    def _emit(self) -> None:
        if not self._out:
            return
        data = bytes(self._out)
        self._out.clear()
        for viewer in self.viewers:
            viewer.offer(data)

    def _ended(self) -> None:
        if self.closed:
            return
        self._emit()
        self.closed = True
        for pending in self._pending:
            if not pending.future.done():
                pending.future.set_exception(StreamClosed("The terminal session is gone."))
        self._pending.clear()
        for viewer in self.viewers:
            viewer.ended = True
            viewer.ready.set()


def _parse_state(lines: list[bytes]) -> PaneState:
    """The pane's state as display-message printed it; a session gone answers with an error
    or with the format's fields empty."""
    try:
        return PaneState.parse(lines[0].decode(errors="replace"))
    except (IndexError, ValueError):
        raise StreamClosed("The terminal session is gone.") from None


class Streams:
    """The process's streams, one per pane, shared by its viewers and closed after the last."""

    def __init__(self) -> None:
        self._streams: dict[tuple[str, str], PaneStream] = {}
        self._users: dict[tuple[str, str], int] = {}
        self._lock = asyncio.Lock()

    async def open(self, socket: str, session: str) -> PaneStream:
        key = (socket, session)
        async with self._lock:
            stream = self._streams.get(key)
            if stream is None or stream.closed:
                stream = PaneStream(socket, session)
                try:
                    await stream.start()
                except BaseException:
                    await stream.close()
                    raise
                self._streams[key], self._users[key] = stream, 0
            self._users[key] += 1
            return stream

    async def release(self, stream: PaneStream) -> None:
        key = (stream.socket, stream.session)
        async with self._lock:
            if self._streams.get(key) is not stream:
                return
            self._users[key] -= 1
            if self._users[key] > 0:
                return
            del self._streams[key], self._users[key]
        await stream.close()


_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Streams] = weakref.WeakKeyDictionary()


def streams() -> Streams:
    """The running event loop's streams (daphne has one loop; each test its own)."""
    loop = asyncio.get_running_loop()
    found = _by_loop.get(loop)
    if found is None:
        found = _by_loop[loop] = Streams()
    return found
