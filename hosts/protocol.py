"""What crosses the channel layer between the web tier and a host's runner, and how a runner
knows a message is lab's and meant for it.

Every message to a runner names its host and is signed with a key derived from SECRET_KEY
(which the web tier and every runner share: they also share the login sessions it signs). A
runner refuses a message with a bad signature, for another host, or older than MAX_AGE_S (a
replay). The run a relayed request names is checked again by the runner's own middleware: a
run of another host is refused there, never served from this host's files.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

from django.conf import settings
from django.utils.crypto import salted_hmac

MAX_AGE_S = 60.0
SALT = "lab.hosts.relay"

# Message types (the "type" key; channels maps "relay.http" to a consumer's relay_http).
HTTP = "relay.http"
HTTP_RESPONSE = "relay.http.response"
CALL = "relay.call"
CALL_RESULT = "relay.call.result"
WS_OPEN = "relay.ws.open"
WS_ACCEPT = "relay.ws.accept"
WS_SEND = "relay.ws.send"
WS_RECEIVE = "relay.ws.receive"
WS_CLOSE = "relay.ws.close"
WS_PING = "relay.ws.ping"
WS_DISCONNECT = "relay.ws.disconnect"


class Refused(Exception):
    """A message a runner must not act on; the text says why (it is logged, and answered)."""


def channel(host: str) -> str:
    """The channel a host's runner consumes."""
    return f"lab.runner.{host}"


def _digest(message: dict[str, Any]) -> str:
    signed = {k: v for k, v in message.items() if k not in ("sig", "body")}
    body = message.get("body", b"")
    text = json.dumps(signed, sort_keys=True, separators=(",", ":"), default=str)
    material = text + ":" + hashlib.sha256(body if isinstance(body, bytes) else b"").hexdigest()
    return salted_hmac(SALT, material, secret=settings.SECRET_KEY, algorithm="sha256").hexdigest()


def sign(message: dict[str, Any]) -> dict[str, Any]:
    message = {**message, "ts": time.time()}
    message["sig"] = _digest(message)
    return message


def verify(message: dict[str, Any], *, host: str) -> None:
    """Raise Refused unless the message is lab's, fresh, and for `host`."""
    sig = message.get("sig")
    if not isinstance(sig, str) or not hmac.compare_digest(sig, _digest(message)):
        raise Refused("the message's signature does not match (not signed with this lab's SECRET_KEY)")
    if message.get("host") != host:
        raise Refused(f"the message is for host {message.get('host')!r}, and this runner is host {host!r}")
    ts = message.get("ts")
    if not isinstance(ts, float | int) or abs(time.time() - ts) > MAX_AGE_S:
        raise Refused(f"the message is older than {MAX_AGE_S:.0f} s (a replay, or clocks apart)")
    deadline = message.get("deadline")
    if isinstance(deadline, float | int) and time.time() > deadline:
        raise Refused("the web tier stopped waiting for this request before it arrived: not acted on")
