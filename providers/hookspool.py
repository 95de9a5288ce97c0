"""Reading a run's hook spool: the directory an adapter's hook command writes each hook payload
into (`<time_ns:020d>-<pid>.json`, atomically: a temp file renamed into place). No Django.

Any adapter whose CLI reports through hooks may spool them this way (Claude Code: its
COMPAT §8; Codex: its COMPAT-adapter §6); what the payloads mean is the adapter's own.

One look (`one_look`): a watcher's wake asks an adapter for several live signals, and each
would stat and list the spool again, and read it again when it changed. Within a look each
spool dir is listed at most once and its payloads read at most once; everything in the look
sees the spool as it was at its first look. A payload landing meanwhile is seen by the next
look: it wakes the watcher again (the spool dir is watched). Outside a look nothing is kept.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
from typing import Any

import orjson

from providers.bounded import put_bounded
from providers.safefile import MAX_SPOOL_BYTES, UnsafeFile, read_regular

log = logging.getLogger(__name__)

# Spool entries already reported as skipped, so a watcher that re-reads the spool at every wake
# says so once, not at every wake.
_reported: dict[str, None] = {}
_reported_guard = threading.Lock()


def spool_time_ns(name: str) -> int:
    """When a spool entry was written, from its name (`<time_ns>-…`); 0 when it has none."""
    head = name.split("-", 1)[0]
    return int(head) if head.isdigit() else 0


def stale_payloads(
    spool_dir: str, before_ns: int, keep: frozenset[str] = frozenset({"SessionStart"})
) -> list[str]:
    """The payloads written before `before_ns` whose event is not in `keep` (SessionStart names
    the conversation: it stays)."""
    return [
        name
        for event in spool_events(spool_dir)
        if event.get("hook_event_name") not in keep
        and 0 < spool_time_ns(name := str(event.get("_spool_name", ""))) < before_ns
    ]


def spool_events(spool_dir: str) -> list[dict[str, Any]]:
    """Every complete hook payload, oldest first (names sort by write time).

    The agent can write into the spool (its path is on the agent's command line): an entry that
    is not a regular file or is over the hook writer's cap is skipped, logged once, never waited
    on or held whole."""
    if not spool_dir:
        return []
    look = _open_look()
    if look is None:
        return _read_events(spool_dir, _names(spool_dir))
    seen = look.spools.get(spool_dir)
    if seen is None:
        seen = look.spools[spool_dir] = _Seen(_signature(spool_dir))
    if seen.events is None:
        seen.events = _read_events(spool_dir, seen.signature[1])
    # Copies: a caller may add keys to what it was given; the next caller gets the payloads.
    return [dict(event) for event in seen.events]


def _names(spool_dir: str) -> tuple[str, ...]:
    try:
        return tuple(sorted(os.listdir(spool_dir)))
    except FileNotFoundError:
        return ()


def _read_events(spool_dir: str, names: tuple[str, ...]) -> list[dict[str, Any]]:
    events = []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        path = os.path.join(spool_dir, name)
        try:
            data = orjson.loads(read_regular(path, MAX_SPOOL_BYTES))
        except UnsafeFile as exc:
            _report_once(path, exc)
            continue
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(data, dict):
            data["_spool_name"] = name
            events.append(data)
    return events


def _report_once(path: str, exc: UnsafeFile) -> None:
    with _reported_guard:
        if path in _reported:
            return
        put_bounded(_reported, path, None, 1024)
    log.warning("Skipped a hook spool entry: %s %s", path, exc.strerror)


# The spool directory's mtime and its entries' names (spool_signature).
SpoolSignature = tuple[int, tuple[str, ...]]


def spool_signature(spool_dir: str) -> SpoolSignature:
    """Cheap change signature: the directory's mtime and its entries' names, no file read.

    Names, not a count: the hook creates a temp file and renames it, and a watcher woken by the
    create can list the directory between the two. Both steps can fall in one tick of the
    filesystem's coarse clock, so the mtime and the entry count alone would not change on the
    rename and the cached view would miss the payload until the next hook."""
    look = _open_look()
    if look is None:
        return _signature(spool_dir)
    seen = look.spools.get(spool_dir)
    if seen is None:
        seen = look.spools[spool_dir] = _Seen(_signature(spool_dir))
    return seen.signature


def _signature(spool_dir: str) -> SpoolSignature:
    try:
        st = os.stat(spool_dir)
        return st.st_mtime_ns, tuple(sorted(os.listdir(spool_dir)))
    except FileNotFoundError:
        return (0, ())


class _Seen:
    """One spool dir as a look first saw it: its signature, then its payloads once read."""

    __slots__ = ("events", "signature")

    def __init__(self, signature: SpoolSignature) -> None:
        self.signature = signature
        self.events: list[dict[str, Any]] | None = None


class _Look:
    __slots__ = ("open", "spools")

    def __init__(self) -> None:
        self.open = True
        self.spools: dict[str, _Seen] = {}


# A contextvar, so a look holds in the asyncio task that entered it and in the threads it hands
# work to (asgiref's sync_to_async and asyncio.to_thread copy the context), never in another
# wake's task. A context copied during the look (a task started then) keeps the object, not the
# look: `open` turns false when the look ends, and a closed look is ignored.
_look: contextvars.ContextVar[_Look | None] = contextvars.ContextVar("lab_spool_look", default=None)


def _open_look() -> _Look | None:
    look = _look.get()
    return look if look is not None and look.open else None


class one_look:
    """Within the block, each spool dir is stat'ed and listed at most once and its payloads read
    at most once (see the module's docstring). Nested, the outer look holds. A class, not a
    generator: it is entered on every watcher wake."""

    __slots__ = ("look", "token")

    def __enter__(self) -> None:
        if _open_look() is not None:
            self.look = None
            return
        self.look = _Look()
        self.token = _look.set(self.look)

    def __exit__(self, *exc: object) -> None:
        if self.look is not None:
            self.look.open = False
            _look.reset(self.token)
