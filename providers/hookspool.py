"""Reading a run's hook spool: the directory an adapter's hook command writes each hook payload
into (`<time_ns:020d>-<pid>.json`, atomically: a temp file renamed into place). No Django.

Any adapter whose CLI reports through hooks may spool them this way (Claude Code: its
COMPAT §8; Codex: its COMPAT-adapter §6); what the payloads mean is the adapter's own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson


def spool_events(spool_dir: str) -> list[dict[str, Any]]:
    """Every complete hook payload, oldest first (names sort by write time)."""
    if not spool_dir:
        return []
    try:
        names = sorted(n for n in os.listdir(spool_dir) if n.endswith(".json") and not n.startswith("."))
    except FileNotFoundError:
        return []
    events = []
    for name in names:
        try:
            data = orjson.loads(Path(spool_dir, name).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(data, dict):
            data["_spool_name"] = name
            events.append(data)
    return events


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
