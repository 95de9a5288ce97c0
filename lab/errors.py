"""Client errors are 400s in one log line, never 500s with a traceback.

Django's own 400 view is wrapped in requires_csrf_token, whose CSRF check reads request.POST
again: a body that could not be decoded the first time (a form in latin-1) raises again inside
the error view and turns the 400 into a 500. The static files handler lets the finders'
SuspiciousFileOperation (an encoded `..` in the path) escape as a 500. And Django logs every
4xx it built from an exception with that exception's traceback.

A tmux server that stops answering is not a bug in lab either: the page says what is wrong (a
503 with tmux's state in words), not a bare 500 after the call's bound.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import SuspiciousOperation
from django.core.handlers.exception import response_for_exception
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils.deprecation import MiddlewareMixin
from django.utils.html import escape

from providers.tmux import TmuxNotAnswering

log = logging.getLogger(__name__)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: reads nothing of the request, so it cannot fail the way the request did."""
    return HttpResponseBadRequest(
        "<!doctype html><title>Bad request</title><h1>Bad request (400)</h1>", content_type="text/html"
    )


class StaticFilesHandler(ASGIStaticFilesHandler):
    """Static files served in-process, with a path that escapes the static roots a 400, and
    `nosniff` like every other response (these pass by SecurityMiddleware)."""

    async def get_response_async(self, request: HttpRequest) -> Any:
        response = await super().get_response_async(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        return response

    def serve(self, request: HttpRequest) -> Any:
        try:
            return super().serve(request)
        except (SuspiciousOperation, ValueError) as exc:  # ValueError: a NUL in the path
            if not isinstance(exc, SuspiciousOperation):
                exc = SuspiciousOperation(f"Not a static file path: {request.path!r}")
            return response_for_exception(request, exc)


class ClientErrorsInOneLine(logging.Filter):
    """A 4xx is the client's mistake, not lab's: log it without the traceback Django attaches."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
        return True


class TmuxNotAnsweringMiddleware(MiddlewareMixin):
    """A page that asked lab's tmux server and got no answer within the bound: 503 and why."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, TmuxNotAnswering):
            return None
        log.error("%s %s: %s", request.method, request.path, exception)
        return HttpResponse(
            "<!doctype html><title>tmux does not answer</title><h1>lab's tmux server does not answer</h1>"
            f"<p>{escape(str(exception))}</p><p>Reload when it answers again.</p>",
            status=503,
            content_type="text/html",
            headers={"Retry-After": "10"},
        )
