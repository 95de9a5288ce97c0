"""Reading a run's hook spool: the directory an adapter's hook command writes each hook payload
into (`<time_ns:020d>-<pid>.json`, atomically: a temp file renamed into place). No Django.

Any adapter whose CLI reports through hooks may spool them this way (Claude Code: its
COMPAT §8; Codex: its COMPAT-adapter §6); what the payloads mean is the adapter's own.
"""

from __future__ import annotations

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


def spool_events(spool_dir: str) -> list[dict[str, Any]]:
    """Every complete hook payload, oldest first (names sort by write time).

    The agent can write into the spool (its path is on the agent's command line): an entry that
    is not a regular file or is over the hook writer's cap is skipped, logged once, never waited
    on or held whole."""
    if not spool_dir:
        return []
    try:
        names = sorted(n for n in os.listdir(spool_dir) if n.endswith(".json") and not n.startswith("."))
    except FileNotFoundError:
        return []
    events = []
    for name in names:
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
    try:
        st = os.stat(spool_dir)
        return st.st_mtime_ns, tuple(sorted(os.listdir(spool_dir)))
    except FileNotFoundError:
        return (0, ())
