"""Websocket gatekeeping: the exact origin of lab's own pages, and a logged-in session.

Channels' AllowedHostsOriginValidator compares hosts only, so a page on another localhost port
would pass it; this compares scheme://host:port exactly, and refuses a missing Origin.
"""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host


class ExactOriginValidator:
    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        headers = dict(scope.get("headers", []))
        origin = headers.get(b"origin", b"").decode("latin-1")
        host = headers.get(b"host", b"").decode("latin-1")
        domain, _port = split_domain_port(host)
        if (
            scope["type"] != "websocket"
            or origin not in settings.LAB_ALLOWED_ORIGINS
            or not domain
            or not validate_host(domain, settings.ALLOWED_HOSTS)
        ):
            denier = WebsocketDenier()
            return await denier(scope, receive, send)
        return await self.application(scope, receive, send)


class NoSuchSocket(AsyncWebsocketConsumer):
    """Any other websocket path: refused with 4404 (channels' router raised "No route found"
    and daphne logged a traceback)."""

    async def connect(self) -> None:
        await self.close(code=4404)
