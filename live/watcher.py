"""One RunWatcher per live run per process: inotify on the transcript, push only what is new.

The watcher wakes on file events (inotify, one descriptor per process read on the event loop,
no grouping delay: docs/architecture.md, "Latency budget"), on the exit of the TUI's process (a
pidfd, no polling), or when asked. Each wake parses only the appended bytes through the run's
TranscriptIndex and notifies the run's group; each socket then pulls the messages it lacks.
Watchers stop when the run has ended and nobody watches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import connections

from live import feed
from live.inotify import hub
from live.leases import WatchLease
from providers.base import AgentProvider, LiveSignals
from providers.hookspool import one_look
from providers.schema import RunHandle
from providers.tmux import Tmux
from runs import runview, selectors, services, transcripts
from runs.limits import usage_summary
from runs.models import Run
from runs.rendering import render
from runs.runview import EMPTY, RunView
from runs.selectors import LiveView
from runs.transcripts import TranscriptIndex, indexed, on_full_index, tail_of, transcript_index

log = logging.getLogger(__name__)

# Only where a pidfd is unavailable: how often to ask tmux whether the session is still there.
LIVENESS_FALLBACK_S = 5.0
# A worker without the run's watch lease retries this often, so a dead holder is replaced
# within a few seconds (the lease is PostgreSQL's; the transcript itself is never polled).
LEASE_RETRY_S = 2.0
# The steps that cannot run inline (see RunWatcher.step_inline) run on these threads, not on the
# loop's default executor (six threads on two cores): at 50 busy runs, six CPU-bound step threads
# fought the event loop's thread for the GIL and every frame the loop sent waited behind them
# (bench.latency, 50 runs: p95 320 ms with six, 160-210 ms with one or two, back to back). Two,
# so that one slow step (a first read of a huge transcript) does not stall every other run.
STEP_THREADS = 2
_steps = ThreadPoolExecutor(max_workers=STEP_THREADS, thread_name_prefix="lab-watch")
# At most this much appended transcript is parsed on the event loop (about 2 ms); more goes
# to a thread.
INLINE_MAX_BYTES = 256 * 1024
# A wake that only appends to the transcript itself caused skips the live channel: the sweep,
# locate_transcript, and the live signals when they last said nothing. Those change only with
# another file event in the watched directories (providers/base.py, LiveSignals), except the
# sweep's clock: at least this often a wake checks them all anyway.
LIVE_RECHECK_S = 5.0


@dataclass
class Snapshot:
    epoch: str
    state: str
    panel_html: str
    next_seq: int
    ended: bool
    path: str = ""
    watch: tuple[str, ...] = ()  # the directories whose events wake this watcher
    view: RunView | None = None  # the wake's view, for the feed


@dataclass
class RunWatcher:
    run_id: int
    subscribers: int = 0
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    epoch: str = ""
    next_seq: int = -1
    state: str = ""
    panel: str = ""
    exited: bool = False
    has_pidfd: bool = False
    stale: bool = False  # re-read the Run row on the next wake
    panel_key: tuple[object, ...] = ()
    path: str = ""  # the transcript the last step read
    held: str = ""  # the transcript whose index this watcher pins
    watching: tuple[str, tuple[str, ...]] | None = None  # (transcript path, its watch_paths)
    # Something other than an append to the transcript woke it (a spool file, another file
    # beside the transcript, the TUI's exit, a poke, a timeout): check the live channel.
    live_dirty: bool = True
    live_checked: float = 0.0  # when the live channel was last checked (time.monotonic)
    live_quiet: bool = False  # and its signals said nothing then
    transcript_file: tuple[str, str] = ("", "")  # self.path split: (its directory, its name)
    # Sockets in other processes may watch the run (a shared channel layer): the panel is then
    # rendered for them even while no socket here watches. One process knows its own sockets.
    shared: bool = True

    async def main(self) -> None:
        lease = WatchLease(self.run_id)
        try:
            while not await sync_to_async(lease.try_acquire, thread_sensitive=False)():
                # Another worker watches this run; its notifications reach our sockets through
                # the shared channel layer. Stand by to take over if it dies.
                self.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), LEASE_RETRY_S)
                if self.subscribers <= 0:
                    return
            await self.lead()
        finally:
            await sync_to_async(lease.release, thread_sensitive=False)()
            _watchers.pop(self.run_id, None)

    async def lead(self) -> None:
        layer = get_channel_layer()
        self.shared = layer is not None and not isinstance(layer, InMemoryChannelLayer)
        watch_task: asyncio.Task[None] | None = None
        watched: tuple[str, ...] = ()
        pidfd = None
        try:
            run: Run | None = None
            while True:
                # Cleared before the step, never after: an event during the step must wake the
                # next wait (clearing later lost such wakes under load).
                self.wake.clear()
                full = self.live_dirty or self.stale or time.monotonic() - self.live_checked >= LIVE_RECHECK_S
                self.live_dirty = False
                if run is None or self.stale:
                    # The watcher writes the run's transcript_path and ended_at itself; anything
                    # else lab changes pokes it. So no query per wake.
                    self.stale = False
                    run = await Run.objects.aget(pk=self.run_id)
                snap = await self.wake_once(layer, run, full=full)
                if snap.ended and self.subscribers <= 0:
                    return
                paths = snap.watch
                if paths != watched:
                    if watch_task:
                        watch_task.cancel()
                    watched = paths
                    watch_task = asyncio.create_task(self.watch(paths)) if paths else None
                if pidfd is None and not snap.ended:
                    pid = await sync_to_async(Tmux(run.tmux_socket).pane_pid, thread_sensitive=False)(
                        run.tmux_session
                    )
                    pidfd = self.watch_exit(pid)
                    self.has_pidfd = pidfd is not None
                timeout = None if pidfd is not None or snap.ended else LIVENESS_FALLBACK_S
                try:
                    await asyncio.wait_for(self.wake.wait(), timeout)
                except TimeoutError:
                    self.live_dirty = True
        except Run.DoesNotExist:
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("watcher for run %s failed", self.run_id)
            raise
        finally:
            if watch_task:
                watch_task.cancel()
            self.hold("")
            if pidfd is not None:
                with contextlib.suppress(Exception):
                    asyncio.get_running_loop().remove_reader(pidfd)
                os.close(pidfd)

    async def wake_once(self, layer: Any, run: Run, *, full: bool = True) -> Snapshot:
        """One wake: the step (on the loop when it can, else in a thread, which redoes it), then
        the notification and the feed. All in one look at the hook spool (providers/hookspool.py
        one_look): however many live signals the provider derives, it lists the spool once. A
        wake that asks nothing of the live channel (an append, signals quiet) takes no look."""
        if not full and self.live_quiet:
            return await self._wake(layer, run, full=full)  # the spool is not asked: no look
        with one_look():
            return await self._wake(layer, run, full=full)

    async def _wake(self, layer: Any, run: Run, *, full: bool) -> Snapshot:
        snap = self.step_inline(run, full=full)
        if snap is None:
            snap = await sync_to_async(self.step, thread_sensitive=False, executor=_steps)(run, full=full)
        self.hold(snap.path)
        await self.publish(layer, run, snap)
        return snap

    def hold(self, path: str) -> None:
        """Keep the index of `path` (the transcript this watcher reads) in memory while it
        watches, and let the one it read before go (runs.transcripts.pin)."""
        if path == self.held:
            return
        if path:
            transcripts.pin(path)
        if self.held:
            transcripts.unpin(self.held)
        self.held = path

    async def watch(self, paths: tuple[str, ...]) -> None:
        """Wake on any change in these directories (the process's one inotify fd, read on
        the loop: no thread, no grouping delay) until cancelled."""
        inotify = hub()

        def on(directory: str) -> Callable[[str], None]:
            def changed(name: str) -> None:
                # An append to the transcript itself (its directory and name) leaves the live
                # channel as it was; any other entry ("" too: the directory, an overflow) may not.
                if (directory, name) != self.transcript_file:
                    self.live_dirty = True
                self.wake.set()

            return changed

        added = []
        try:
            for directory in paths:
                callback = on(directory)
                try:
                    inotify.add(directory, callback)
                    added.append((directory, callback))
                except OSError:
                    log.warning("cannot watch %s for run %s", directory, self.run_id)
            self.live_dirty = True
            self.wake.set()  # whatever changed while the watch was being set up
            await asyncio.Event().wait()  # until cancelled: the paths changed or the run ended
        finally:
            for directory, callback in added:
                inotify.remove(directory, callback)

    def watch_exit(self, pid: int | None) -> int | None:
        """A pidfd on the TUI's process: readable the moment it exits (also when the whole
        tmux server is killed, which takes its children with it)."""
        if pid is None:
            return None
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            return None
        loop = asyncio.get_running_loop()

        def exited() -> None:
            loop.remove_reader(fd)  # stays readable forever: one wake is enough
            self.exited = True
            self.live_dirty = True
            self.wake.set()

        loop.add_reader(fd, exited)
        return fd

    def step(self, run: Run, *, full: bool = True) -> Snapshot:
        """The synchronous part, in a thread: liveness, the new messages, the state, the
        panel, and what to watch next."""
        try:
            snap = self._step(run, inline=False, full=full)
        finally:
            # These threads live as long as lab and Django's request cycle never closes their
            # connections: the rare step that writes (a new transcript path, an ended run)
            # closes its own, so no idle thread holds a database session.
            connections.close_all()
        assert snap is not None
        return snap

    def step_inline(self, run: Run, *, full: bool = True) -> Snapshot | None:
        """The same step on the event loop, for the common wake (a few lines appended to a
        live run's transcript): no thread hop, so no fight for the GIL with the loop's own
        thread. None when the step needs a query, a subprocess, a wait for the index's lock
        or a big read; the caller then runs step() in a thread, which redoes it all."""
        return self._step(run, inline=True, full=full)

    def _step(self, run: Run, *, inline: bool, full: bool = True) -> Snapshot | None:
        """One wake: liveness, the transcript's place, what was appended, the state, the panel.
        The provider and the run's handle are resolved once and the wake's one RunView
        (runs/runview.py) carries them, with what was read, to the panel and the feed. Without
        `full` (only the transcript's own appends woke it, see LIVE_RECHECK_S) the live channel
        is not asked again: no sweep, the transcript stays where it is, and live signals that
        said nothing still say so."""
        if inline and not run.is_ended and (self.exited or not self.has_pidfd):
            return None  # the run may have ended: ask tmux, write ended_at
        provider, handle = run.provider, run.handle()
        if full:
            self.live_checked = time.monotonic()
            if isinstance(provider, LiveSignals):
                # Resolved hook payloads go; the provider keeps what it still needs (cheap: it
                # looks only when its spool changed).
                provider.sweep(handle)
        # With a pidfd on the TUI the exit is an event; ask tmux (a subprocess) only without one.
        if not run.is_ended and (self.exited or (not self.has_pidfd and not selectors.run_alive(run))):
            services.run_mark_ended(run=run)
        path = run.transcript_path and (provider.locate_transcript(handle) if full else run.transcript_path)
        if path and path != run.transcript_path:
            if inline:
                return None
            # clear/epoch: the provider located a new transcript; adopt it (docs/architecture.md).
            Run.objects.filter(pk=run.pk).update(transcript_path=path)
            run.transcript_path = path
            handle = run.handle()  # the provider is told the new path
        index = self._read(run, provider, path, inline=inline) if path else None
        if path and index is None:
            return None  # only a thread can read this: the caller runs step()
        tail = tail_of(index, 0) if index is not None else EMPTY
        view = runview.from_read(run, provider, handle, tail, self._live(run, provider, handle, full=full))
        return Snapshot(
            epoch=tail.epoch,
            state=str(view.state),
            panel_html=self._panel(view),
            next_seq=tail.next_seq,
            ended=run.is_ended,
            path=path or "",
            watch=self._watch_paths(run),
            view=view,
        )

    def _live(self, run: Run, provider: AgentProvider, handle: RunHandle, *, full: bool) -> LiveView | None:
        """The live channel, asked only when it may have changed: a full wake, or signals that
        were up last time (an append may close what they showed open). None: not asked."""
        if run.is_ended or not (full or not self.live_quiet):
            return None
        live = selectors.live_view(provider, handle)
        self.live_quiet = live.state is None
        return live

    def _read(self, run: Run, provider: AgentProvider, path: str, *, inline: bool) -> TranscriptIndex | None:
        """The run's index advanced over what was appended. Inline (on the loop), only a small
        append to an index this process already holds, without waiting for its lock; None
        otherwise."""
        if not inline:
            index = transcript_index(run, path, provider=provider)
            index.advance()
            return index
        found = indexed(path)
        if found is None or found.provider is not provider or not found.advance_small(INLINE_MAX_BYTES):
            return None
        return found

    def _panel(self, view: RunView) -> str:
        """The state panel, rendered again only when what it shows changed, and not at all for
        a run nobody watches: its first socket wakes the watcher (RunConsumer.connect), which
        renders it then. The runs list and the feed need no HTML of a run."""
        if self.subscribers <= 0 and not self.shared:
            self.panel_key = ()
            return ""
        tail, run = view.tail, view.run
        background = tail.background if not run.is_ended else ()
        usage = usage_summary(view.usage) if not run.is_ended else None
        key: tuple[object, ...] = (view.state, view.dialog, run.is_ended, background, tail.since)
        key += (tail.running, tail.queued, view.limit, usage, run.continue_on_limit)
        if key == self.panel_key and self.panel:
            return self.panel
        self.panel_key = key
        return render("runs/detail.html#panel", {**view.panel_context(), "oob": True})

    def _watch_paths(self, run: Run) -> tuple[str, ...]:
        """watch_paths, worked out again only when the transcript moved or a directory was
        still missing last time (its parent is watched until it exists)."""
        cached = self.watching
        if cached is not None and cached[0] == run.transcript_path:
            return cached[1]
        paths, complete = watch_paths(run)
        self.watching = (run.transcript_path, paths) if complete else None
        return paths

    async def publish(self, layer: Any, run: Run, snap: Snapshot) -> None:
        """Notify the run's sockets when anything they show changed; each pulls its own gap."""
        if layer is None:
            return
        changed = (snap.epoch, snap.next_seq, snap.panel_html) != (self.epoch, self.next_seq, self.panel)
        if changed:
            # What this watcher has read (path, epoch, next_seq): a socket in this process takes
            # the gap from the index; one in another worker reads up to it.
            await layer.group_send(
                run.group_name,
                {
                    "type": "run.update",
                    "panel": snap.panel_html,
                    "path": snap.path,
                    "epoch": snap.epoch,
                    "next_seq": snap.next_seq,
                },
            )
        if snap.state != self.state:
            # The feed hook: the runs lists' rows and every page's count of runs that wait, from
            # the wake's own view (nothing derived again).
            assert snap.view is not None
            await feed.state_changed(layer, snap.view, previous=self.state)
        if snap.path != self.path:
            self.transcript_file = os.path.split(snap.path) if snap.path else ("", "")
        self.epoch, self.next_seq, self.panel, self.state, self.path = (
            snap.epoch,
            snap.next_seq,
            snap.panel_html,
            snap.state,
            snap.path,
        )


def watch_paths(run: Run) -> tuple[tuple[str, ...], bool]:
    """The transcript's directory (a clear makes a new file there) and the spool dir, where
    they exist yet; a missing one is watched through its nearest existing parent. And whether
    both exist (then the answer stays good while the transcript path does)."""
    out: set[str] = set()
    complete = True
    transcript_dir = (os.path.dirname(run.transcript_path) or ".") if run.transcript_path else None
    for p in (transcript_dir, str(run.spool_dir)):
        if not p:
            continue
        while not os.path.exists(p) and p != os.path.dirname(p):
            complete = False
            p = os.path.dirname(p)
        out.add(p)
    return tuple(sorted(out)), complete


_watchers: dict[int, RunWatcher] = {}
_loop: asyncio.AbstractEventLoop | None = None


def ensure_watcher(run_id: int) -> RunWatcher:
    """Start the run's watcher in this process if it is not running (idempotent)."""
    global _loop
    _loop = asyncio.get_running_loop()
    watcher = _watchers.get(run_id)
    if watcher is None or watcher.task is None or watcher.task.done():
        watcher = _watchers[run_id] = RunWatcher(run_id)
        watcher.task = asyncio.create_task(watcher.main(), name=f"run-watcher-{run_id}")
    return watcher


def poke(run_id: int) -> None:
    """Ask a run's watcher to look now (after lab itself changed something)."""
    watcher = _watchers.get(run_id)
    if watcher is not None and _loop is not None:
        watcher.stale = True
        watcher.live_dirty = True
        _loop.call_soon_threadsafe(watcher.wake.set)


def on_run_changed(sender: object, *, run_id: int, **kwargs: object) -> None:
    """runs.signals.run_changed: lab itself changed the run (a page's POST)."""
    poke(run_id)


def _full_index_ready(path: str) -> None:
    """A big transcript's full index replaced its provisional one (runs/transcripts.py): the
    watchers reading it publish the new numbering now, so their pages re-render in it."""
    for watcher in list(_watchers.values()):
        if watcher.path == path:
            poke(watcher.run_id)


on_full_index.append(_full_index_ready)
