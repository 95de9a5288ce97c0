from __future__ import annotations

import json
import logging
import time
from typing import Any

from asgiref.sync import sync_to_async
from channels.consumer import get_handler_name
from channels.db import aclose_old_connections, database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from accounts import sockets
from broadcast import groups
from hosts import identity
from live import feed
from live.frames import catch_up_frames, catch_up_from_memory
from live.watcher import ensure_watcher
from runs.models import Run

# Close codes in the 4000 range are the application's own (RFC 6455 §7.4.2).
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
# The login this socket was opened with no longer holds, though the browser may hold a newer one
# (the one that changed the password): the page reconnects, and that handshake says which.
CLOSE_SESSION_CHANGED = 4001
# RFC 6455 §7.4.1: a frame type the endpoint does not accept, and data it cannot use.
CLOSE_UNSUPPORTED_DATA = 1003
CLOSE_INVALID_PAYLOAD = 1007

logger = logging.getLogger(__name__)

# Channel-layer events whose handlers need no database connection (run_update prepares its
# own when it must query).
NO_DB_EVENTS = frozenset(
    {groups.HTML_EVENT, "run.update", groups.FEED_EVENT, sockets.SESSION_ENDED, sockets.SESSION_CHECK}
)
# A session can also end with no message to its sockets (it expired, it was deleted, a message
# was lost on a full channel): a socket checks it again before a send once this long has
# passed since the last check. Checked on a send, not per send (a query and a thread hop per
# frame per socket, which the latency budget forbids) nor on a timer (an idle socket sends
# nothing, so a stale one shows nothing; its next frame is what must not go out).
SESSION_RECHECK_S = 15.0


class LabConsumer(AsyncJsonWebsocketConsumer):
    """Base: authorize, join groups, forward. Refuses anonymous sockets before accepting."""

    groups_to_join: list[str]
    run_id: int
    session_key: str = ""
    session_checked_at: float = 0.0
    session_over: bool = False

    async def connect(self) -> None:
        if not await self.authorize():
            return
        self.groups_to_join = [groups.LAB, *self.session_groups()]
        await self.join_and_accept()
        # The runs list shows a live row for every live run: their watchers must run.
        await self.watch_live_runs()

    async def authorize(self) -> bool:
        """A logged-in session, or the socket is closed as logged out."""
        user = self.scope.get("user")
        session = self.scope.get("session")
        key = getattr(session, "session_key", None) if session is not None else None
        if user is None or not user.is_authenticated or not key:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return False
        self.session_key = key
        self.session_checked_at = time.monotonic()  # the handshake has just checked it
        return True

    def session_groups(self) -> list[str]:
        """Where a logout of this session and a change to its user reach the socket."""
        return [sockets.session_group(self.session_key), sockets.user_group(self.scope["user"].pk)]

    async def send(
        self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False
    ) -> None:
        """Every frame a page gets goes through here: none after its session ended."""
        if self.session_over:
            return
        if time.monotonic() - self.session_checked_at >= SESSION_RECHECK_S and not await self.session_holds():
            return
        await super().send(text_data=text_data, bytes_data=bytes_data, close=close)

    async def session_holds(self) -> bool:
        self.session_checked_at = time.monotonic()
        if await database_sync_to_async(sockets.session_is_current)(self.session_key):
            return True
        await self.end_session(CLOSE_SESSION_CHANGED)
        return False

    async def end_session(self, code: int) -> None:
        # Frames already queued for this socket are dispatched before its disconnect arrives:
        # the flag drops them.
        self.session_over = True
        await self.close(code=code)

    async def session_ended(self, event: dict[str, Any]) -> None:
        """This session logged out: every page that opened a socket with it is logged out."""
        await self.end_session(CLOSE_UNAUTHENTICATED)

    async def session_check(self, event: dict[str, Any]) -> None:
        """Something about the user changed (a password, say): does this session still hold?"""
        if not self.session_over:
            await self.session_holds()

    async def route_run(self) -> Run | None:
        """The run the socket's path names (self.run_id); None after closing with 4404 when
        there is no such run."""
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        run = await Run.objects.filter(pk=self.run_id).afirst()
        if run is None:
            await self.close(code=CLOSE_NOT_FOUND)
        return run

    async def watch_live_runs(self) -> None:
        """This host's live runs: another host's are watched by its runner, where their files
        are (a watcher here would take the run's lease and read nothing true)."""
        if identity.role() == identity.WEB:
            return
        mine = Run.objects.live().filter(host=identity.host_name())
        async for run_id in mine.values_list("pk", flat=True):
            ensure_watcher(run_id)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if content.get("type") == "feed":
            await self.follow_feed()

    async def follow_feed(self) -> None:
        """The page's script asks for the runs feed each time its socket opens: it counts the
        runs that wait, so their watchers must run, and it starts from every live run's state
        (a page woken from sleep catches up here). Joined before the snapshot is read, so no
        change falls between the two."""
        if feed.FEED_GROUP not in self.groups_to_join:
            self.groups_to_join.append(feed.FEED_GROUP)
            await self.channel_layer.group_add(feed.FEED_GROUP, self.channel_name)
        await self.watch_live_runs()
        entries = await database_sync_to_async(feed.snapshot)()
        await self.send(text_data=feed.frame(runs=entries, snapshot=True))

    async def dispatch(self, message: dict[str, Any]) -> None:
        """channels runs close_old_connections in its one sync thread before every handler: a
        thread hop per event per socket, which at 50 busy runs queued every socket's frames
        behind that thread. Handlers that touch no database skip it."""
        if message["type"] in NO_DB_EVENTS:
            await getattr(self, get_handler_name(message))(message)
            return
        await super().dispatch(message)

    async def join_and_accept(self) -> None:
        for group in self.groups_to_join:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "groups_to_join", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def lab_html(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["html"])

    async def feed_frame(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["text"])

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        """Pages send small JSON text frames; anything else closes the socket with a code and
        one log line (the JSON consumer's own decoding raised, and daphne logged a traceback)."""
        if text_data is None:
            await self.refuse(CLOSE_UNSUPPORTED_DATA, "a binary frame")
            return
        try:
            content = json.loads(text_data)
        except ValueError:
            await self.refuse(CLOSE_INVALID_PAYLOAD, "a frame that is not JSON")
            return
        if not isinstance(content, dict):
            await self.refuse(CLOSE_INVALID_PAYLOAD, "a frame that is not a JSON object")
            return
        await self.receive_json(content, **kwargs)

    async def refuse(self, code: int, what: str) -> None:
        logger.warning("websocket %s closed (%d): the page sent %s", self.scope.get("path", "?"), code, what)
        await self.close(code=code)


class RunConsumer(LabConsumer):
    """A run page's socket. The page says which (epoch, last seq) it has; the consumer replays
    the gap from the transcript and then forwards only messages newer than what it sent, so a
    reconnect has no gap and no duplicate."""

    run_id: int
    run: Run  # as read at connect or at the last hello
    epoch: str = ""
    last_seq: int = -1
    ready: bool = False
    panel_sent: str = ""
    latest_panel: str = ""

    async def connect(self) -> None:
        if not await self.authorize():
            return
        run = await self.route_run()
        if run is None:
            return
        self.run = run
        self.groups_to_join = [groups.LAB, groups.run(self.run_id), *self.session_groups()]
        await self.join_and_accept()
        self.watcher = ensure_watcher(self.run_id)
        self.watcher.subscribers += 1
        if not self.watcher.panel:
            # Unwatched until now, its watcher rendered no panel: a wake renders it for this page.
            self.watcher.wake.set()

    async def disconnect(self, code: int) -> None:
        await super().disconnect(code)
        watcher = getattr(self, "watcher", None)
        if watcher is not None:
            watcher.subscribers -= 1
            watcher.wake.set()  # an ended run's watcher may stop now

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if content.get("type") != "hello":
            await super().receive_json(content, **kwargs)
            return
        seq, epoch = content.get("seq", -1), content.get("epoch", "")
        # What the page has: a whole number (not 1e309, not true) and a string.
        if type(seq) is not int or not isinstance(epoch, str) or seq < -1:
            await self.refuse(CLOSE_INVALID_PAYLOAD, "a hello without a whole-number seq and a string epoch")
            return
        await self.catch_up(epoch, seq)
        panel = self.watcher.panel or self.latest_panel
        if panel:
            # The state may have changed while the page was away: the watcher publishes only
            # on change, so a reconnecting page gets the current panel now.
            self.panel_sent = panel
            await self.send(text_data=panel)

    async def catch_up(self, epoch: str, seq: int, *, path: str = "") -> None:
        """Bring the page up to date. With the `path` a watcher announced, the run this socket
        read at connect does (its id, provider and name do not change) and the transcript is
        not located again; without one (a hello), the run is read afresh."""
        if not path:
            self.run = await Run.objects.aget(pk=self.run_id)
        frames, self.epoch, self.last_seq = await sync_to_async(catch_up_frames, thread_sensitive=False)(
            self.run, epoch, seq, path=path or None
        )
        self.ready = True
        for frame in frames:  # bounded frames (live/frames.FRAME_MAX_BYTES)
            await self.send(text_data=frame)

    async def run_update(self, event: dict[str, Any]) -> None:
        """A notification, not the data: each socket pulls what *it* lacks from the
        transcript, so whoever advanced the shared index, nothing is skipped or sent twice."""
        if not self.ready:
            self.latest_panel = event["panel"]  # sent with the hello's catch-up
            return  # the hello's catch-up will read the file, which includes this
        if event["panel"] != self.panel_sent:  # the state first, then the messages it covers
            self.panel_sent = event["panel"]
            await self.send(text_data=event["panel"])
        # The common case: the watcher in this process has just read what it announces, so the
        # gap comes from memory — no query, no thread, no read — rendered once for every
        # socket at the same place (live/frames.catch_up_from_memory).
        fast = catch_up_from_memory(
            event.get("path", ""),
            self.epoch,
            self.last_seq,
            announced_epoch=event.get("epoch", ""),
            announced_next_seq=event.get("next_seq", 0),
        )
        if fast is None:
            path = event.get("path", "")
            if not path:
                await aclose_old_connections()  # what dispatch skipped, for catch_up's query
            await self.catch_up(self.epoch, self.last_seq, path=path)
            return
        frames, self.last_seq = fast
        for frame in frames:
            await self.send(text_data=frame)
