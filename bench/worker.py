"""daphne for lab, like `manage.py serve`, with optional measured patches (BENCH_PATCH=a,b).

Patches are the fixes the benchmark report proposes, applied by monkeypatching so their effect
can be measured without editing app code:

  inotify         RunWatcher.watch uses one process-wide inotify fd on the event loop instead of
                  a watchfiles thread per run (each polls the GIL every `step` = 3 ms: 50 runs
                  are ~17,000 GIL grabs/s, 60% of daphne's samples in the 50-run profile).
  pidfd_liveness  RunWatcher.step skips the `tmux has-session` subprocess (services.run_alive)
                  when the watcher holds a pidfd on the pane's process: the pidfd already wakes
                  it on exit, so the per-wake subprocess (13 ms p50, 55 ms p95 on this machine) is
                  pure latency.
"""

from __future__ import annotations

import os
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _patch_pidfd_liveness() -> None:
    from runs import services, watcher

    tls = threading.local()
    run_alive = services.run_alive
    step, watch_exit = watcher.RunWatcher.step, watcher.RunWatcher.watch_exit

    def alive(run):  # type: ignore[no-untyped-def]
        if getattr(tls, "pidfd", False):
            return not run.is_ended
        return run_alive(run)

    def patched_watch_exit(self, pid):  # type: ignore[no-untyped-def]
        fd = watch_exit(self, pid)
        self._bench_pidfd = fd is not None
        return fd

    def patched_step(self, run):  # type: ignore[no-untyped-def]
        tls.pidfd = getattr(self, "_bench_pidfd", False)
        try:
            return step(self, run)
        finally:
            tls.pidfd = False

    services.run_alive = alive
    watcher.RunWatcher.step = patched_step
    watcher.RunWatcher.watch_exit = patched_watch_exit


class _Inotify:
    """One process-wide inotify fd on the event loop (loop.add_reader): no thread, no step
    polling. Each watched directory maps to the wake events of the watchers that want it."""

    IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE = 0x2, 0x8, 0x80, 0x100

    def __init__(self) -> None:
        import ctypes
        import ctypes.util

        self.libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.wakes: dict[int, set] = {}  # type: ignore[type-arg]
        self.wds: dict[str, int] = {}
        self.loop = None

    def add(self, path: str, wake) -> int:  # type: ignore[no-untyped-def]
        import asyncio

        if self.loop is None:
            self.loop = asyncio.get_running_loop()
            self.loop.add_reader(self.fd, self._read)
        mask = self.IN_MODIFY | self.IN_CLOSE_WRITE | self.IN_MOVED_TO | self.IN_CREATE
        wd = self.libc.inotify_add_watch(self.fd, path.encode(), mask)
        if wd >= 0:
            self.wakes.setdefault(wd, set()).add(wake)
        return wd

    def remove(self, wd: int, wake) -> None:  # type: ignore[no-untyped-def]
        self.wakes.get(wd, set()).discard(wake)  # the kernel watch stays (cheap, shared)

    def _read(self) -> None:
        import struct

        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        i = 0
        while i + 16 <= len(data):
            wd, _mask, _cookie, n = struct.unpack_from("iIII", data, i)
            for wake in self.wakes.get(wd, ()):
                wake.set()
            i += 16 + n


def _patch_inotify() -> None:
    import asyncio

    from runs import watcher

    shared: list[_Inotify] = []

    async def watch(self, paths):  # type: ignore[no-untyped-def]
        if not shared:
            shared.append(_Inotify())
        ino = shared[0]
        wds = [ino.add(p, self.wake) for p in paths]
        try:
            await asyncio.Event().wait()
        finally:
            for wd in wds:
                ino.remove(wd, self.wake)

    watcher.RunWatcher.watch = watch


def _patch_redis_timeout() -> None:
    """lab/settings.py's CHANNEL_LAYERS with socket_timeout above channels_redis' 5 s BZPOPMIN:
    redis-py 8's default socket_timeout is also 5 s, so an idle consumer's blocking pop times
    out on the client first and the socket dies ("Timeout reading from ...")."""
    from django.conf import settings

    layer = settings.CHANNEL_LAYERS["default"]
    if layer["BACKEND"].startswith("channels_redis"):
        layer["CONFIG"]["hosts"] = [{"address": settings.REDIS_URL, "socket_timeout": 30}]


PATCHES = {
    "pidfd_liveness": _patch_pidfd_liveness,
    "inotify": _patch_inotify,
    "redis_timeout": _patch_redis_timeout,
}


def main() -> None:
    sys.path.insert(0, ROOT)
    os.chdir(ROOT)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")
    import django

    django.setup()
    for name in filter(None, os.environ.get("BENCH_PATCH", "").split(",")):
        PATCHES[name]()
    from daphne.cli import CommandLineInterface
    from django.conf import settings

    CommandLineInterface().run(
        ["-b", settings.BIND_HOST, "-p", str(settings.BIND_PORT), "lab.asgi:application"]
    )


if __name__ == "__main__":
    main()
