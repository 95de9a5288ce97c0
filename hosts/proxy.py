"""The web tier's socket for a run on another host: the page's frames go to that host's
runner, which drives lab's own consumer for it (hosts/runner.py), and its frames come back.

While the socket is open the proxy watches the host's heartbeat: a host that stops beating
closes the socket with CLOSE_HOST_SILENT and the true sentence as its reason; the page says so
and reconnects, and on its return its hello (epoch, last seq) brings it up to date from the
transcript, with nothing lost or shown twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

from asgiref.sync import sync_to_async
from channels.consumer import AsyncConsumer
from channels.exceptions import StopConsumer
from django.utils.html import escape

from hosts import identity, protocol
from hosts.client import LIVENESS_CHECK_S, host_silence

CLOSE_HOST_SILENT = 4503
CLOSE_NO_ANSWER = 1013  # "try again later": the runner did not answer the open in time
OPEN_TIMEOUT_S = 15.0
PING_EVERY_S = 10.0


def relayed_parts(scope: dict[str, Any]) -> dict[str, Any]:
    """What of an ASGI scope crosses to the runner: the request as the browser sent it."""
    return {
        "path": scope["path"],
        "query_string": scope.get("query_string", b"").decode("latin-1"),
        "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope.get("headers", [])],
        "scheme": scope.get("scheme"),
        "client": list(scope["client"]) if scope.get("client") else None,
        "server": list(scope["server"]) if scope.get("server") else None,
        "subprotocols": list(scope.get("subprotocols") or []),
    }


class HostProxyConsumer(AsyncConsumer):
    host: str = ""

    def __init__(self, host: str = "") -> None:
        super().__init__()
        self.host = host
        self.runner_channel = ""  # the relayed socket's own channel on the runner
        self.ident = uuid.uuid4().hex
        self.opened = asyncio.Event()
        self.watch: asyncio.Task[None] | None = None
        self.closed = False
        self.accepted = False

    async def websocket_connect(self, event: dict[str, Any]) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.send({"type": "websocket.close", "code": 4401})
            return
        silent = await sync_to_async(host_silence, thread_sensitive=False)(self.host)
        if silent:
            await self.close_silent(silent)
            return
        message = {
            "type": protocol.WS_OPEN,
            "host": self.host,
            "id": self.ident,
            "reply": self.channel_name,
            "scope": relayed_parts(self.scope),
        }
        await self.channel_layer.send(protocol.channel(self.host), protocol.sign(message))
        self.watch = asyncio.ensure_future(self.keep_watch())

    async def keep_watch(self) -> None:
        """Ping the runner's socket, and close this one when the host stops beating."""
        loop = asyncio.get_running_loop()
        opened_by = loop.time() + OPEN_TIMEOUT_S
        pinged = loop.time()
        while not self.closed:
            await asyncio.sleep(LIVENESS_CHECK_S)
            silent = await sync_to_async(host_silence, thread_sensitive=False)(self.host)
            if silent:
                await self.close_silent(silent)
                return
            if not self.opened.is_set() and loop.time() > opened_by:
                self.closed = True
                await self.send({"type": "websocket.close", "code": CLOSE_NO_ANSWER})
                return
            if self.runner_channel and loop.time() - pinged >= PING_EVERY_S:
                pinged = loop.time()
                await self.to_runner({"type": protocol.WS_PING})

    async def close_silent(self, why: str) -> None:
        """Closed with the reason the page shows: accepted first, since a socket refused at
        the handshake reaches the page as a bare failure (1006) with no reason."""
        self.closed = True
        if not self.accepted:
            self.accepted = True
            await self.send({"type": "websocket.accept"})
        # daphne sends no close reason: the sentence goes first, into the page's #host-silence.
        said = f'<div id="host-silence" hx-swap-oob="true" hidden>{escape(why)}</div>'
        await self.send({"type": "websocket.send", "text": said})
        await self.send({"type": "websocket.close", "code": CLOSE_HOST_SILENT, "reason": why[:120]})

    async def to_runner(self, message: dict[str, Any]) -> None:
        if self.runner_channel:
            with contextlib.suppress(Exception):  # a full or gone channel: the watch closes us
                await self.channel_layer.send(self.runner_channel, message)

    async def websocket_receive(self, event: dict[str, Any]) -> None:
        await self.to_runner(
            {"type": protocol.WS_RECEIVE, "text": event.get("text"), "bytes": event.get("bytes")}
        )

    async def websocket_disconnect(self, event: dict[str, Any]) -> None:
        self.closed = True
        await self.to_runner({"type": protocol.WS_DISCONNECT, "code": event.get("code", 1000)})
        if self.watch is not None:
            self.watch.cancel()
        raise StopConsumer

    # What the runner sends back (only for this socket's id: the channel is this consumer's).
    async def relay_ws_accept(self, event: dict[str, Any]) -> None:
        if event.get("id") != self.ident or self.closed:
            return
        self.runner_channel = str(event.get("channel") or "")
        self.opened.set()
        accept: dict[str, Any] = {"type": "websocket.accept"}
        if event.get("subprotocol"):
            accept["subprotocol"] = event["subprotocol"]
        self.accepted = True
        await self.send(accept)

    async def relay_ws_send(self, event: dict[str, Any]) -> None:
        if event.get("id") != self.ident or self.closed:
            return
        frame: dict[str, Any] = {"type": "websocket.send"}
        if event.get("text") is not None:
            frame["text"] = event["text"]
        else:
            frame["bytes"] = event.get("bytes")
        await self.send(frame)

    async def relay_ws_close(self, event: dict[str, Any]) -> None:
        if event.get("id") != self.ident or self.closed:
            return
        self.closed = True
        close: dict[str, Any] = {"type": "websocket.close", "code": event.get("code") or 1000}
        if event.get("reason"):
            close["reason"] = event["reason"]
        await self.send(close)


def routed(local: Any, host_of: Any) -> Any:
    """An ASGI app for a run's socket: `local` when this process serves the run's host,
    else a HostProxyConsumer to that host's runner. `host_of(scope)` is the run's host (None:
    no such run, which `local` answers). A runner never relays: it refuses a run of another
    host (close 4421), so a message sent to the wrong runner is never served from its files."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        host = await host_of(scope)
        if host is None or identity.serves(host):
            await local(scope, receive, send)
            return
        if identity.role() == identity.RUNNER:
            await receive()  # websocket.connect
            reason = f"this run lives on host {host}, not on host {identity.host_name()}"
            await send({"type": "websocket.close", "code": 4421, "reason": reason[:120]})
            return
        await HostProxyConsumer.as_asgi(host=host)(scope, receive, send)

    return app
