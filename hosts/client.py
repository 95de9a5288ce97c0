"""The web tier's side of a relay: send one message to a host's runner and wait for its typed
answer, bounded in time and never longer than the host stays alive.

A host whose runner stops beating is given up on within STALE_AFTER_S (its own heartbeat says
so), whatever the request's own bound: the operator reads "host build-2 has not answered for
12 s", never a page that hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from hosts import protocol
from hosts.models import Host

# How often a wait looks at the host's heartbeat.
LIVENESS_CHECK_S = 1.0


class HostSilent(Exception):
    """The host did not answer in time; the text is the true sentence to show. `down`: its
    heartbeat stopped too (its runs are listed unreachable), rather than one request outlasting
    its bound on a host that still beats."""

    def __init__(self, why: str, *, down: bool = True) -> None:
        super().__init__(why)
        self.down = down


class RelayFailed(Exception):
    """The runner answered that it could not do what was asked; the text says why."""


def host_silence(name: str) -> str:
    """Why a host would not answer now ("" while its heartbeat is fresh)."""
    host = Host.objects.filter(name=name).first()
    if host is None:
        return f"host {name} is not registered"
    return "" if host.up else host.silence_text()


async def ask(host: str, message: dict[str, Any], *, timeout: float) -> dict[str, Any]:
    """Send `message` to `host`'s runner and return its answer, or raise HostSilent."""
    layer = get_channel_layer()
    if layer is None:
        raise HostSilent(f"host {host} cannot be reached: lab has no channel layer (set REDIS_URL)")
    silent = await sync_to_async(host_silence, thread_sensitive=False)(host)
    if silent:
        raise HostSilent(silent)
    reply = await layer.new_channel()
    ident = uuid.uuid4().hex
    # The deadline goes with it: a runner that gets it later (it was down, and came back) does
    # not act on a request nobody waits for any more.
    message = {**message, "host": host, "id": ident, "reply": reply, "deadline": time.time() + timeout}
    await layer.send(protocol.channel(host), protocol.sign(message))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    # One receive for the whole wait: a receive cancelled midway may drop what it was reading.
    receiving = asyncio.ensure_future(layer.receive(reply))
    try:
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise HostSilent(
                    f"host {host} has not answered this request for {timeout:.0f} s; it is still up, so "
                    "the request may still be running there and lab cannot tell whether it was done",
                    down=False,
                )
            done, _ = await asyncio.wait({receiving}, timeout=min(LIVENESS_CHECK_S, remaining))
            if done:
                answer = receiving.result()
                if answer.get("id") != ident:  # an answer to a request this channel never sent
                    receiving = asyncio.ensure_future(layer.receive(reply))
                    continue
                return answer
            silent = await sync_to_async(host_silence, thread_sensitive=False)(host)
            if silent:
                raise HostSilent(
                    f"{silent}, while it handled this request: lab cannot tell whether it was done"
                )
    finally:
        if not receiving.done():
            receiving.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await receiving


async def call(host: str, verb: str, args: dict[str, Any], *, timeout: float) -> Any:
    """A named call on the host's runner (hosts.runner.register); its JSON result."""
    answer = await ask(host, {"type": protocol.CALL, "verb": verb, "args": args}, timeout=timeout)
    if answer.get("error"):
        raise RelayFailed(str(answer["error"]))
    return answer.get("result")
