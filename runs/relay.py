"""The web tier's half of several machines: a request for a run of another host is relayed to
that host's runner (hosts/), which serves it with lab's own views from its own files.

Two kinds of path are relayed:
- `/runs/<id>/…`: to the run's host.
- `/hosts/<name>/…`: to host <name>, with `/hosts/<name>` as the script prefix, so every link
  and form the runner renders there stays on that host (its new-run form, its Providers page).

A runner never relays: a request it gets for another host's run is refused with 421, so a
message that reaches the wrong runner is never served from the wrong machine's files.
"""

from __future__ import annotations

import re
from http.cookies import SimpleCookie
from typing import Any

from asgiref.sync import async_to_sync, iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from hosts import identity, protocol
from hosts.client import HostSilent, ask
from hosts.identity import HOST_NAME
from runs.models import Run

HOST_PATH = re.compile(rf"^/hosts/(?P<name>{HOST_NAME})(?P<rest>/.*)$")
# What a relayed request may take to be answered: a push or a start is bounded well below
# (git's 120 s), a page far below. A host that stops beating is given up on sooner.
POST_TIMEOUT_S = 180.0
GET_TIMEOUT_S = 30.0
# The most a relayed request may carry: ten attachments at their limits, and the form.
BODY_MAX_BYTES = 64 * 1024 * 1024
# Hop-by-hop, or set again by this tier's own middleware for its own response.
_DROP = frozenset({"content-length", "connection", "transfer-encoding", "set-cookie"})


def run_host(run_id: int) -> str | None:
    return Run.objects.filter(pk=run_id).values_list("host", flat=True).first()


def target(request: HttpRequest) -> tuple[str, str] | None:
    """(host, script prefix) when the request is for another host; None when it is served
    here (or names no host)."""
    match = HOST_PATH.match(request.path_info)
    if match:
        host = match["name"]
        return None if identity.serves(host) else (host, f"/hosts/{host}")
    try:
        kwargs = resolve(request.path_info).kwargs
    except Resolver404:
        return None
    run_id = kwargs.get("run_id")
    if not isinstance(run_id, int):
        return None
    host = run_host(run_id)
    if host is None or identity.serves(host):
        return None
    return host, ""


def here(request: HttpRequest) -> None:
    """`/hosts/<this host>/…` is this process's own page: served as the path without it."""
    match = HOST_PATH.match(request.path_info)
    if match and identity.serves(match["name"]):
        request.path_info = request.path = match["rest"]


def refused(host: str) -> HttpResponse:
    return HttpResponse(
        f"This is host {identity.host_name()}'s runner; that run lives on host {host}.",
        status=421,
        content_type="text/plain; charset=utf-8",
    )


def silent(exc: HostSilent) -> HttpResponse:
    why = str(exc)
    more = " Its runs are shown as unreachable until it answers again." if exc.down else ""
    return HttpResponse(
        f"{why[0].upper()}{why[1:]}.{more}",
        status=503,
        content_type="text/plain; charset=utf-8",
        headers={"Retry-After": "5"},
    )


def relayed_request(request: HttpRequest, prefix: str) -> tuple[dict[str, Any], bytes]:
    body = request.read(BODY_MAX_BYTES + 1)
    if len(body) > BODY_MAX_BYTES:
        raise ValueError(f"the request is larger than {BODY_MAX_BYTES // (1024 * 1024)} MB")
    headers = [[k.lower(), v] for k, v in request.headers.items()]
    query = request.META.get("QUERY_STRING", "")
    scope = {
        "method": request.method,
        "path": prefix + request.path_info,
        "root_path": prefix,
        "query_string": query,
        "headers": headers,
        "scheme": request.scheme,
        "client": [request.META.get("REMOTE_ADDR") or "127.0.0.1", 0],
        "server": [request.get_host().rsplit(":", 1)[0], int(request.get_port() or 80)],
    }
    return scope, body


async def relay(request: HttpRequest, host: str, prefix: str) -> HttpResponse:
    try:
        scope, body = relayed_request(request, prefix)
    except ValueError as exc:
        return HttpResponse(f"Not relayed: {exc}.", status=413, content_type="text/plain; charset=utf-8")
    timeout = GET_TIMEOUT_S if request.method in ("GET", "HEAD") else POST_TIMEOUT_S
    try:
        answer = await ask(host, {"type": protocol.HTTP, "scope": scope, "body": body}, timeout=timeout)
    except HostSilent as exc:
        return silent(exc)
    response = HttpResponse(answer.get("body") or b"", status=int(answer.get("status") or 502))
    for key, value in answer.get("headers") or []:
        if key.lower() == "set-cookie":
            response.cookies.load(SimpleCookie(value))
        elif key.lower() not in _DROP:
            response[key] = value
    response["X-Lab-Host"] = host
    return response


class HostRelayMiddleware:
    """After authentication: an anonymous request is never relayed (it gets the login page
    here); the runner checks the session, CSRF and origin again itself."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        here(request)
        found = target(request)
        if found is not None and identity.role() == identity.RUNNER:
            return refused(found[0])  # whoever asks: a runner serves its own host's runs only
        if found is None or not request.user.is_authenticated:
            return self.get_response(request)
        return async_to_sync(relay)(request, *found)

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        here(request)
        found = await sync_to_async(target, thread_sensitive=False)(request)
        if found is not None and identity.role() == identity.RUNNER:
            return refused(found[0])  # whoever asks: a runner serves its own host's runs only
        if found is None:
            return await self.get_response(request)
        authenticated = await sync_to_async(lambda: request.user.is_authenticated)()
        if not authenticated:
            return await self.get_response(request)
        return await relay(request, *found)


async def socket_host(scope: dict[str, Any]) -> str | None:
    """The host of the run a socket's path names (None: no run there)."""
    run_id = scope.get("url_route", {}).get("kwargs", {}).get("run_id")
    if not isinstance(run_id, int):
        return None
    return await sync_to_async(run_host, thread_sensitive=False)(run_id)
