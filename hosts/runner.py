"""A host's runner: consume the host's channel and serve what the web tier relays.

- `relay.http`: a page or a POST for one of this host's runs, served by lab's own ASGI app in
  this process, so every check a direct request meets (login, CSRF, origin, the run's host)
  is made again here.
- `relay.ws.open`: a socket (a run page's, the Terminal view's), driven the same way; its
  frames go back to the web tier's socket and the page's frames come here.
- `relay.call`: a named function a higher app registered (the runs list's rows).

The runner also beats (hosts.heartbeat) and, through the ASGI app, runs the watchers of its
runs: transcript updates go to the run's group on the shared layer, as they do on one host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

from hosts import identity, protocol

log = logging.getLogger("lab.runner")

# A relayed socket the web tier has not pinged for this long is gone (its worker died).
SOCKET_IDLE_S = 30.0

_calls: dict[str, Callable[..., Any]] = {}


def register(verb: str, fn: Callable[..., Any]) -> None:
    """A function the web tier may call on this host by name (its keyword arguments and its
    result are JSON)."""
    _calls[verb] = fn


class Runner:
    def __init__(self, host: str, app: Callable[..., Any]) -> None:
        self.host = host
        self.app = app
        self.layer = get_channel_layer()
        self.tasks: set[asyncio.Task[None]] = set()

    async def serve(self) -> None:
        name = protocol.channel(self.host)
        log.info("runner for host %s consumes %s", self.host, name)
        while True:
            message = await self.layer.receive(name)
            self.spawn(self.handle(message))

    def spawn(self, coro: Any) -> None:
        with identity.acting_as_runner(self.host):  # the task copies the context as it is now
            task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        try:
            protocol.verify(message, host=self.host)
        except protocol.Refused as exc:
            log.warning("refused a %s message: %s", kind, exc)
            await self.refuse(message, f"host {self.host} refused the message: {exc}")
            return
        try:
            if kind == protocol.HTTP:
                await self.http(message)
            elif kind == protocol.WS_OPEN:
                await self.socket(message)
            elif kind == protocol.CALL:
                await self.call(message)
            else:
                await self.refuse(message, f"host {self.host} does not know a {kind!r} message")
        except Exception:
            log.exception("relayed %s failed", kind)
            await self.refuse(message, f"host {self.host} failed on this request: see its runner's log")

    async def answer(self, message: dict[str, Any], answer: dict[str, Any]) -> None:
        reply = message.get("reply")
        if isinstance(reply, str) and reply:
            with contextlib.suppress(Exception):  # the asker may be gone: nothing to tell
                await self.layer.send(reply, {**answer, "id": message.get("id")})

    async def refuse(self, message: dict[str, Any], why: str) -> None:
        kind = message.get("type")
        if kind == protocol.HTTP:
            body = why.encode()
            headers = [["content-type", "text/plain; charset=utf-8"]]
            await self.answer(
                message, {"type": protocol.HTTP_RESPONSE, "status": 421, "headers": headers, "body": body}
            )
        elif kind == protocol.WS_OPEN:
            await self.answer(message, {"type": protocol.WS_CLOSE, "code": 4421, "reason": why[:120]})
        else:
            await self.answer(message, {"type": protocol.CALL_RESULT, "error": why})

    async def call(self, message: dict[str, Any]) -> None:
        fn = _calls.get(str(message.get("verb")))
        if fn is None:
            await self.refuse(message, f"host {self.host} has no call {message.get('verb')!r}")
            return
        args = message.get("args") or {}
        result = await sync_to_async(fn, thread_sensitive=False)(**args)
        await self.answer(message, {"type": protocol.CALL_RESULT, "result": result})

    async def http(self, message: dict[str, Any]) -> None:
        scope = asgi_scope("http", message["scope"])
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": message.get("body") or b"", "more_body": False}
            await asyncio.Event().wait()  # the request stays connected until the answer is sent
            return {"type": "http.disconnect"}

        status, headers, chunks = 500, [], []

        async def send(event: dict[str, Any]) -> None:
            nonlocal status, headers
            if event["type"] == "http.response.start":
                status = event["status"]
                headers = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in event.get("headers", [])]
            elif event["type"] == "http.response.body":
                chunks.append(event.get("body", b""))

        await self.app(scope, receive, send)
        body = b"".join(chunks)
        await self.answer(
            message, {"type": protocol.HTTP_RESPONSE, "status": status, "headers": headers, "body": body}
        )

    async def socket(self, message: dict[str, Any]) -> None:
        """One relayed socket: the app's events go to the web tier's consumer; the page's come
        on a channel of the socket's own, named in the accept."""
        scope = asgi_scope("websocket", message["scope"])
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        mine = await self.layer.new_channel()
        await inbox.put({"type": "websocket.connect"})
        web = str(message["reply"])
        ident = message.get("id")

        async def send(event: dict[str, Any]) -> None:
            kind = event["type"]
            if kind == "websocket.accept":
                out = {"type": protocol.WS_ACCEPT, "channel": mine, "subprotocol": event.get("subprotocol")}
            elif kind == "websocket.send":
                out = {"type": protocol.WS_SEND, "text": event.get("text"), "bytes": event.get("bytes")}
            elif kind == "websocket.close":
                out = {
                    "type": protocol.WS_CLOSE,
                    "code": event.get("code", 1000),
                    "reason": event.get("reason", ""),
                }
            else:
                return
            try:
                await self.layer.send(web, {**out, "id": ident})
            except ChannelFull:
                # The web tier is not reading: close; the page reconnects and its hello
                # brings it up to date from the transcript (nothing lost).
                app.cancel()

        app = asyncio.ensure_future(self.app(scope, inbox.get, send))
        try:
            while not app.done():
                receiving = asyncio.ensure_future(self.layer.receive(mine))
                done, _ = await asyncio.wait(
                    {receiving, app}, timeout=SOCKET_IDLE_S, return_when=asyncio.FIRST_COMPLETED
                )
                if receiving not in done:
                    receiving.cancel()
                    if app.done():
                        break
                    await inbox.put({"type": "websocket.disconnect", "code": 1001})  # the web side went quiet
                    break
                event = receiving.result()
                kind = event.get("type")
                if kind == protocol.WS_RECEIVE:
                    await inbox.put(
                        {"type": "websocket.receive", "text": event.get("text"), "bytes": event.get("bytes")}
                    )
                elif kind == protocol.WS_DISCONNECT:
                    await inbox.put({"type": "websocket.disconnect", "code": event.get("code", 1000)})
                    break
                # relay.ws.ping: only keeps the socket from going idle
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(app), 10)
        finally:
            if not app.done():
                app.cancel()


def asgi_scope(kind: str, relayed: dict[str, Any]) -> dict[str, Any]:
    """An ASGI scope as daphne would build it, from the relayed request's parts."""
    path = str(relayed["path"])
    scope: dict[str, Any] = {
        "type": kind,
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "scheme": relayed.get("scheme") or ("ws" if kind == "websocket" else "http"),
        "path": path,
        "raw_path": path.encode(),
        "root_path": str(relayed.get("root_path") or ""),
        "query_string": str(relayed.get("query_string", "")).encode("latin-1"),
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in relayed.get("headers", [])],
        "client": tuple(relayed["client"]) if relayed.get("client") else None,
        "server": tuple(relayed["server"]) if relayed.get("server") else None,
    }
    if kind == "http":
        scope["method"] = str(relayed["method"])
    else:
        scope["subprotocols"] = list(relayed.get("subprotocols") or [])
    return scope
