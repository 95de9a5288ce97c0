"""Response headers Django's own settings do not give: nothing lab serves through Django is
kept by a cache. Static files do not pass through here (lab/errors.py's handler serves them)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase
from django.utils.deprecation import MiddlewareMixin


class NoStoreMiddleware(MiddlewareMixin):
    """Cache-Control: no-store on every response: a page shows the agent's transcript, its
    diffs and the operator's settings, which must not stay in a browser's or proxy's cache (a
    shared machine, the back button after logout)."""

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if "no-store" not in response.get("Cache-Control", ""):
            response["Cache-Control"] = "no-store"
        return response
