"""Helpers the security and reliability tests share: a logged-in session cookie, websockets
through lab's real ASGI stack, frame collection, and the walk of every route."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator

from channels.testing import WebsocketCommunicator
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.urls import URLPattern, URLResolver, get_resolver

from lab.asgi import application
from lab.routing import websocket_urlpatterns
from lab.websocket import NoSuchSocket

ORIGIN = "http://127.0.0.1:8000"
HOST = "127.0.0.1:8000"
# The close code of channels' WebsocketDenier: the origin and Host gate (lab/websocket.py)
# refused the handshake before any consumer ran. The consumers' own codes are 4401 and 4404.
GATE_REFUSED = 1000


def session_cookie(user) -> bytes:
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return f"sessionid={store.session_key}".encode()


def ws_headers(cookie: bytes | None = None, *, origin: str | None = ORIGIN, host: str | None = HOST):
    headers = []
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if host is not None:
        headers.append((b"host", host.encode()))
    if cookie is not None:
        headers.append((b"cookie", cookie))
    return headers


async def ws_try(path: str, headers) -> tuple[bool, int | None]:
    """(accepted, close code) of one websocket handshake through lab.asgi.application."""
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect()
    await communicator.disconnect()
    return connected, code


async def ws_open(path: str, cookie: bytes) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(application, path, headers=ws_headers(cookie))
    connected, _ = await communicator.connect()
    assert connected, f"the socket {path} was refused"
    return communicator


async def ws_hello(path: str, cookie: bytes) -> list[str]:
    """Open a logged-in socket on `path` and return what it answers first: on a run's route,
    the hello's catch-up up to its cursor; on a run's terminal, its first frame (who holds the
    keyboard); on lab's own route, which takes no hello, nothing."""
    ws = await ws_open(path, cookie)
    try:
        if path.endswith("/terminal/"):
            return [await ws.receive_from(timeout=10)]
        if "/runs/" not in path:
            return []
        await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
        return await frames_until(ws, lambda f: '<div id="cursor"' in f)
    finally:
        await ws.disconnect()


async def frames_until(ws: WebsocketCommunicator, predicate: Callable[[str], bool], timeout: float = 10.0):
    """Collect frames until one satisfies predicate; return everything received."""
    loop = asyncio.get_running_loop()
    seen: list[str] = []
    deadline = loop.time() + timeout
    while True:
        remaining = deadline - loop.time()
        assert remaining > 0, f"timed out; got {seen[-5:]!r}"
        frame = await ws.receive_from(timeout=remaining)
        seen.append(frame)
        if predicate(frame):
            return seen


async def drain(ws: WebsocketCommunicator, quiet: float = 0.3) -> list[str]:
    """Every frame until the socket has been quiet for `quiet` seconds."""
    # receive_nothing, not a receive_from timeout: asgiref cancels the application on a timeout.
    out: list[str] = []
    while not await ws.receive_nothing(timeout=quiet, interval=0.02):
        out.append(await ws.receive_from(timeout=5))
    return out


MSG_RE = re.compile(r'<li id="msg-(\w+)-(\d+)"')


def seqs(frames: list[str]) -> list[int]:
    return [int(s) for f in frames for _epoch, s in MSG_RE.findall(f)]


def _patterns(resolver=None, prefix: str = "", ns: str = "") -> Iterator[tuple[str, str]]:
    resolver = resolver or get_resolver()
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            sub_ns = f"{ns}{p.namespace}:" if p.namespace else ns
            yield from _patterns(p, prefix + str(p.pattern), sub_ns)
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), f"{ns}{p.name}" if p.name else ""


def concrete(route: str, run_id: int = 1) -> str:
    """A request path for a route pattern: ids become `run_id`, other parameters a word."""
    out = route.replace("^", "").replace("$", "").replace("\\Z", "")
    out = re.sub(r"<int:[^>]+>", str(run_id), out)
    out = re.sub(r"<str:provider_id>", "fake", out)
    out = re.sub(r"<[^>]+>", "x", out)
    out = re.sub(r"\(\?P<[^>]+>[^)]*\)", "x", out)
    out = re.sub(r"\(\?:[^)]*\)\??", "", out)
    return "/" + out.lstrip("/")


def http_routes() -> list[tuple[str, str]]:
    """(route pattern, name) for every URL pattern lab serves, admin included."""
    return sorted(set(_patterns()))


def ws_routes(run_id: int = 1) -> list[str]:
    """Every socket route lab serves; the catch-all that refuses unknown paths serves none."""
    served = [
        p for p in websocket_urlpatterns if getattr(p.callback, "consumer_class", None) is not NoSuchSocket
    ]
    return sorted({concrete(str(p.pattern), run_id) for p in served})
