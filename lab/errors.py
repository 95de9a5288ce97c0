"""Client errors are 400s in one log line, never 500s with a traceback.

Django's own 400 view is wrapped in requires_csrf_token, whose CSRF check reads request.POST
again: a body that could not be decoded the first time (a form in latin-1) raises again inside
the error view and turns the 400 into a 500. The static files handler lets the finders'
SuspiciousFileOperation (an encoded `..` in the path) escape as a 500. And Django logs every
4xx it built from an exception with that exception's traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import SuspiciousOperation
from django.core.handlers.exception import response_for_exception
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: reads nothing of the request, so it cannot fail the way the request did."""
    return HttpResponseBadRequest(
        "<!doctype html><title>Bad request</title><h1>Bad request (400)</h1>", content_type="text/html"
    )


class StaticFilesHandler(ASGIStaticFilesHandler):
    """Static files served in-process, with a path that escapes the static roots a 400."""

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
