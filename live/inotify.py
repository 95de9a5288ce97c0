"""One inotify descriptor per process, read on the event loop.

Every run's watcher registers the directories it cares about here; a file event wakes the
watchers of that directory directly, on the loop, with no thread and no grouping delay. (Per
run watchfiles threads, each waking every few milliseconds, cost 61% of daphne's CPU at 50
live runs: the benchmark in bench/ measured it.)

Why a binding of its own rather than asyncinotify: on the same event stream (200 directories,
2000 appends/s, bench/inotify_cost.py) asyncinotify costs about 2.5 times the CPU per append
(0.085 against 0.034 ms). It adds and removes its reader on every batch (two epoll_ctl calls)
and builds an IntFlag, a Path and an Event object per event; this reads one fd that stays
registered and hands each watcher the entry name. At the per-append budget lab aims for
(0.25 ms of daphne's CPU) that difference is a fifth of it.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import errno
import logging
import os
import struct
from collections.abc import Callable

log = logging.getLogger(__name__)

IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

DIR_MASK = (
    IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
    | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
)  # fmt: skip
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)

Callback = Callable[[str], None]  # called with the entry name ("" for the directory itself)

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class InotifyHub:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        fd = _libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        self.fd = fd
        self.loop = loop
        self.paths: dict[int, str] = {}  # wd -> directory
        self.wds: dict[str, int] = {}
        self.callbacks: dict[str, set[Callback]] = {}
        loop.add_reader(fd, self._readable)

    def add(self, directory: str, callback: Callback) -> None:
        if directory not in self.wds:
            wd = _libc.inotify_add_watch(self.fd, os.fsencode(directory), DIR_MASK)
            if wd < 0:
                raise OSError(
                    ctypes.get_errno(), f"inotify_add_watch {directory}: {os.strerror(ctypes.get_errno())}"
                )
            self.wds[directory], self.paths[wd] = wd, directory
        self.callbacks.setdefault(directory, set()).add(callback)

    def remove(self, directory: str, callback: Callback) -> None:
        callbacks = self.callbacks.get(directory)
        if callbacks is None:
            return
        callbacks.discard(callback)
        if not callbacks:
            del self.callbacks[directory]
            wd = self.wds.pop(directory, None)
            if wd is not None:
                self.paths.pop(wd, None)
                _libc.inotify_rm_watch(self.fd, wd)

    def _readable(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 64 * 1024)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            self._dispatch(data)

    def _dispatch(self, data: bytes) -> None:
        pos = 0
        while pos + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
            name = data[pos + _EVENT.size : pos + _EVENT.size + length].rstrip(b"\0").decode(errors="replace")
            pos += _EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                # Events were lost: wake everyone; each watcher re-reads from its cursor.
                for callbacks in list(self.callbacks.values()):
                    for cb in list(callbacks):
                        cb("")
                continue
            directory = self.paths.get(wd)
            if directory is None:
                continue
            if mask & IN_IGNORED:  # the directory went away; its watch is gone
                self.paths.pop(wd, None)
                self.wds.pop(directory, None)
            for cb in list(self.callbacks.get(directory, ())):
                cb(name)


_hubs: dict[int, InotifyHub] = {}


def hub() -> InotifyHub:
    """The running loop's hub (one inotify fd per loop)."""
    loop = asyncio.get_running_loop()
    found = _hubs.get(id(loop))
    if found is None or found.loop is not loop or loop.is_closed():
        found = _hubs[id(loop)] = InotifyHub(loop)
    return found
