"""A reply's bookkeeping in the run's spool dir, for an adapter that types replies into a TUI and
confirms each by its receipt in the transcript: one reply at a time per run (`reply_lock`), the
texts sent but not yet recorded (`Outbox`), and the form a receipt is compared in (`normalize`).
Beside them, the keys that answer or dismiss what the TUI shows: a dialog answer and an
interrupt take turns (`keys_lock`), and an interrupt leaves the time it was sent
(`mark_interrupt`), so an answer to a prompt that Esc has already answered is refused.
No Django.

Every file here is a dotfile in the spool dir, which providers/hookspool.py skips; the pane is on this
host, so every lab worker shares the directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import orjson

from providers.errors import ReplyInFlight, ReplyRefused
from providers.safefile import MAX_SPOOL_BYTES, read_regular, write_private
from providers.schema import RunHandle


def normalize(text: str) -> str:
    """What a receipt compares: the CLIs record NFC and drop invisible format characters (a lone
    zero-width joiner too); whitespace is collapsed (a paste wrapper adds newlines)."""
    text = unicodedata.normalize("NFC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(text.split())


# How long a reply waits for the send ahead of it (New conversation's, another tab's) before it
# is refused with nothing sent: a clear's verification takes seconds, a slow paste more.
REPLY_TURN_WAIT_S = 45.0


def reply_turn_taken(run: RunHandle) -> bool:
    """Whether a send holds the run's reply turn now (tests wait on this, not on a sleep)."""
    path = os.path.join(run.spool_dir, ".reply.lock")
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases a lock it took
    return False


@contextlib.contextmanager
def reply_lock(run: RunHandle, *, wait: float = 0.0) -> Iterator[None]:
    """One reply at a time per run, across every lab worker on the host (a file lock in the
    run's spool dir). With `wait` 0 a second raises ReplyInFlight at once; otherwise it takes
    its turn after the first (a message sent while New conversation is still starting goes
    into the new one), and raises ReplyRefused, nothing sent, if the first is not done in
    `wait` seconds: a different send holds the turn, so no second copy of this one is at
    stake."""
    busy: Exception = (
        ReplyRefused(
            f"Another message to this run was still being sent after {wait:.0f} s, so "
            "yours was not sent. Send it again once that one is in the chat."
        )
        if wait
        else ReplyInFlight("Another message to this run is being sent: wait for it.")
    )
    with _spool_lock(run, ".reply.lock", wait=wait, busy=busy):
        yield


# A keys_lock holder is an interrupt (milliseconds) or an answer's last check and keys (a paste
# and its pauses: a few seconds); waiting longer than this means something is stuck.
KEYS_LOCK_WAIT_S = 10.0
_KEYS_POLL_S = 0.02


@contextlib.contextmanager
def keys_lock(run: RunHandle, *, busy: str, wait: float = KEYS_LOCK_WAIT_S) -> Iterator[None]:
    """A dialog answer's keys and an interrupt, one at a time per run across every lab worker on
    the host: an Esc landing between an answer's last check and its first key answers the
    prompt itself, and the answer's keys then land in the composer as a new prompt. Waits up to
    `wait` for the other holder, then raises ReplyInFlight(busy), nothing sent."""
    with _spool_lock(run, ".keys.lock", wait=wait, busy=ReplyInFlight(busy)):
        yield


@contextlib.contextmanager
def _spool_lock(run: RunHandle, name: str, *, wait: float, busy: Exception) -> Iterator[None]:
    """An exclusive flock on `name` in the run's spool, taken within `wait` seconds (0: now or
    never), else `busy` is raised. The agent can write in the spool: the lock file is never
    opened through a link, nor waited on if it is a FIFO."""
    if not run.spool_dir:
        yield
        return
    Path(run.spool_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(os.path.join(run.spool_dir, name), flags, 0o600)
    except OSError as exc:
        raise ReplyRefused(
            f"The run's {name} is not a file lab will open ({exc.strerror}): something other than "
            "lab put it there. Nothing was sent."
        ) from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise busy from None
                time.sleep(_KEYS_POLL_S)
        yield
    finally:
        os.close(fd)  # releases the lock


def mark_interrupt(run: RunHandle) -> None:
    """Record, under keys_lock and before its key, that an interrupt is sent now."""
    if run.spool_dir:
        Path(run.spool_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
        write_private(os.path.join(run.spool_dir, ".interrupted"), str(time.time_ns()).encode())


def last_interrupt_ns(run: RunHandle) -> int:
    """When lab last sent the run an interrupt (time_ns, the hooks' clock; 0: never)."""
    try:
        text = read_regular(os.path.join(run.spool_dir, ".interrupted"), 64).decode() if run.spool_dir else ""
    except (OSError, UnicodeDecodeError):
        return 0
    return int(text) if text.strip().isdigit() else 0


class Outbox:
    """Sent texts the CLI has not recorded yet (normalized), where each one's receipt would
    start, and when: a resend is refused while the first may still land. The newest few are
    kept."""

    MAX = 8

    def __init__(self, spool_dir: str) -> None:
        self.path = os.path.join(spool_dir, ".outbox") if spool_dir else ""

    def entries(self) -> list[dict[str, object]]:
        if not self.path:
            return []
        try:
            data = orjson.loads(read_regular(self.path, MAX_SPOOL_BYTES))
        except (OSError, orjson.JSONDecodeError):
            return []
        return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []

    def find(self, want: str) -> dict[str, object] | None:
        return next((e for e in self.entries() if e.get("want") == want), None)

    def add(self, entry: dict[str, object]) -> None:
        kept = [e for e in self.entries() if e.get("want") != entry.get("want")]
        self._write([*kept, entry][-self.MAX :])

    def remove(self, want: str) -> None:
        self._write([e for e in self.entries() if e.get("want") != want])

    def _write(self, entries: list[dict[str, object]]) -> None:
        if not self.path:
            return
        if not entries:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            return
        write_private(self.path, orjson.dumps(entries))
