"""Which tool_use_ids a transcript shows answered, read by lab's own scan of the file. No Django.

The live channel needs them: a declined picker or a rejected tool gets no closing hook, only a
tool_result in the transcript (compat §8). The scan is its own, per transcript and incremental
(new complete lines only), so the live channel's answer never depends on who else read the
transcript, or when.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

import orjson

from providers.bounded import put_bounded
from providers.safefile import open_regular

MAX_TRANSCRIPTS = 256  # scans kept, one per transcript a live run writes
MAX_IDS = 1000  # answered ids kept per transcript, newest last
CHUNK = 4 * 1024 * 1024  # read at a time: bounded memory on a huge transcript


@dataclass(slots=True)
class _Scan:
    lock: threading.Lock = field(default_factory=threading.Lock)
    offset: int = 0
    pending: bytes = b""  # a partial last line, held back
    ids: dict[str, None] = field(default_factory=dict)


class ToolResults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scans: dict[str, _Scan] = {}

    def among(self, path: str, tool_use_ids: Iterable[str]) -> frozenset[str]:
        """Those of `tool_use_ids` the transcript at `path` holds a tool_result for, as of now."""
        wanted = frozenset(tool_use_ids)
        if not path or not wanted:
            return frozenset()
        with self._lock:
            scan = self._scans.get(path) or _Scan()
            put_bounded(self._scans, path, scan, MAX_TRANSCRIPTS)
        # Per transcript: two runs' watchers never wait on each other's reads.
        with scan.lock:
            _catch_up(path, scan)
            return frozenset(t for t in wanted if t in scan.ids)


def _catch_up(path: str, scan: _Scan) -> None:
    try:
        with open_regular(path) as (fd, _st):
            while chunk := os.pread(fd, CHUNK, scan.offset):
                scan.offset += len(chunk)
                *lines, scan.pending = (scan.pending + chunk).split(b"\n")
                for line in lines:
                    for tool_use_id in _answered(line):
                        put_bounded(scan.ids, tool_use_id, None, MAX_IDS)
    except OSError:
        return  # missing yet, or not a regular file (the transcript reader says so)


def _answered(line: bytes) -> list[str]:
    """compat §1: a tool's result is a user entry whose content holds a tool_result block."""
    if b'"tool_result"' not in line:
        return []
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        return []
    message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "user" else None
    content = message.get("content") if isinstance(message, dict) else None
    return [
        block["tool_use_id"]
        for block in (content if isinstance(content, list) else ())
        if isinstance(block, dict)
        and block.get("type") == "tool_result"
        and isinstance(block.get("tool_use_id"), str)
    ]
