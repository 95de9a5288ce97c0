"""A bounded window of the last keys a transcript reader saw, cheap to carry and to keep.

A reader carries what later lines need in an immutable state (Cursor.provider_state), and the
transcript index keeps one such state per checkpoint, for the whole transcript. Kept as a tuple
of key strings, a window of 256 keys is about 21 KB per state, and a read that rebuilds a set and
a deque from it and a tuple after costs tens of microseconds per appended line. Here each key
is an 8-byte digest in one `bytes` (2 KB for 256 keys): a read copies it once into a bytearray
(one memcpy), looks a key up with a C-level search, and hands the unchanged object on when it
added nothing.

The digest is Python's own str hash, which is salted per process: a window is valid in the
process that made it, which is where cursors live (they never leave it). Two different keys share
a digest with odds of about 2**-64 per pair, so a window of 256 keys wrongly matches a new key
with odds of about 1 in 7e16.
"""

from __future__ import annotations

from dataclasses import dataclass

_WIDTH = 8


def _digest(key: str) -> bytes:
    return hash(key).to_bytes(_WIDTH, "little", signed=True)


@dataclass(frozen=True, slots=True)
class KeyWindow:
    """The last keys seen, oldest first, each with an optional value (e.g. a tool's name)."""

    digests: bytes = b""
    values: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.digests) // _WIDTH

    def open(self, size: int, *, valued: bool = False) -> OpenWindow:
        """A mutable copy for one read, of at most `size` keys; `valued`: each key has a value."""
        return OpenWindow(self, size, valued)


EMPTY = KeyWindow()

# Values (tool names) as one string object each: the states the index keeps as checkpoints then
# share them instead of each holding its own copies. Bounded: a value is whatever a transcript says.
_VALUES: dict[str, str] = {}
_MAX_VALUES = 1024


def _shared(value: str) -> str:
    shared = _VALUES.get(value)
    if shared is not None:
        return shared
    if len(_VALUES) < _MAX_VALUES:
        _VALUES[value] = value
    return value


def _find(buf: bytes | bytearray, digest: bytes) -> int:
    """The slot of the newest copy of `digest` in `buf`, or -1 (a match must start on a slot)."""
    at = buf.rfind(digest)
    while at > 0 and at % _WIDTH:
        at = buf.rfind(digest, 0, at + _WIDTH - 1)
    return at // _WIDTH if at >= 0 else -1


class OpenWindow:
    """The mutable copy one read works on; `freeze` gives the next state's KeyWindow."""

    __slots__ = ("_base", "_buf", "_size", "_valued", "_values")

    def __init__(self, base: KeyWindow, size: int, valued: bool) -> None:
        self._base = base
        self._size = size
        self._valued = valued
        # Copied from base on the first change only: most reads of an appended line add no key
        # to a given window, and hand the same object on.
        self._buf: bytearray | None = None
        self._values: list[str] = []

    def _slot(self, key: str) -> int:
        return _find(self._base.digests if self._buf is None else self._buf, _digest(key))

    def __contains__(self, key: str) -> bool:
        return self._slot(key) >= 0

    def get(self, key: str) -> str:
        """The value the newest copy of `key` was added with, or ""."""
        slot = self._slot(key)
        if slot < 0 or not self._valued:
            return ""
        return (self._base.values if self._buf is None else self._values)[slot]

    def add(self, key: str, value: str = "") -> None:
        """Remember `key` (and its value) as the newest; the oldest leaves a full window."""
        if self._buf is None:
            self._buf = bytearray(self._base.digests)
            self._values = list(self._base.values) if self._valued else []
        self._buf += _digest(key)
        if self._valued:
            self._values.append(_shared(value))
        if len(self._buf) > self._size * _WIDTH:
            del self._buf[:_WIDTH]
            if self._valued:
                del self._values[0]

    def seen(self, key: str) -> bool:
        """True if `key` is in the window; else add it (a dedupe check)."""
        if self._slot(key) >= 0:
            return True
        self.add(key)
        return False

    def freeze(self) -> KeyWindow:
        if self._buf is None:
            return self._base
        return KeyWindow(bytes(self._buf), tuple(self._values))
