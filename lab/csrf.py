"""CSRF with a required origin: a state-changing request must say where it comes from.

Django checks Origin when it is present and Referer only over HTTPS, so over plain http a
client that leaves both out is judged by the token alone. Every browser sends Origin with a
POST (and lab's Referrer-Policy keeps a same-origin Referer); a request with neither is not
from one of lab's pages, so it is refused like any other CSRF failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponseForbidden
from django.middleware.csrf import CsrfViewMiddleware as DjangoCsrfViewMiddleware

SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")
REASON_NO_ORIGIN = "Origin header missing, and no Referer from lab's own pages."


class CsrfViewMiddleware(DjangoCsrfViewMiddleware):
    def process_view(
        self, request: HttpRequest, callback: Callable[..., Any], callback_args: Any, callback_kwargs: Any
    ) -> HttpResponseForbidden | None:
        refused = super().process_view(request, callback, callback_args, callback_kwargs)
        if refused is not None or request.method in SAFE_METHODS:
            return refused
        if getattr(callback, "csrf_exempt", False) or getattr(request, "_dont_enforce_csrf_checks", False):
            return None
        if "HTTP_ORIGIN" in request.META:
            return None  # Django compared it with lab's origins above
        referer = urlsplit(request.META.get("HTTP_REFERER", ""))
        origin = f"{referer.scheme}://{referer.netloc}"
        # The same origins Django accepts in an Origin header: this host's, and lab's own.
        if origin in (f"{request.scheme}://{request.get_host()}", *settings.CSRF_TRUSTED_ORIGINS):
            return None
        # Django's own refusal: its failure view and its one log line (missing from the stubs).
        return self._reject(request, REASON_NO_ORIGIN)  # type: ignore[attr-defined]
