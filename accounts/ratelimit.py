"""A small per-client login limiter in the cache: enough to turn password guessing from a
loop into a crawl without an extra dependency."""

from __future__ import annotations

from django.core.cache import cache
from django.http import HttpRequest

WINDOW_SECONDS = 60
MAX_ATTEMPTS = 10


def login_attempt_allowed(request: HttpRequest) -> bool:
    key = f"login-attempts:{request.META.get('REMOTE_ADDR', '?')}"
    cache.add(key, 0, WINDOW_SECONDS)
    try:
        attempts = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, WINDOW_SECONDS)
        attempts = 1
    return attempts <= MAX_ATTEMPTS
