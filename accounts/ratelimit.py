"""Login throttling that keeps guessing infeasible without letting a flood lock the operator out.

On loopback every local process shares one address, so a per-address limit alone let any of
them keep the operator out at will. Three limits now, in the cache:

* A browser that has logged in as an account before carries a signed device cookie for it
  (OWASP's "device cookies"). Its attempts count against that device only: MAX_ATTEMPTS a
  minute. A flood from anywhere else does not touch it.
* Every other attempt counts against the account: FREE_FAILURES failed logins, then each
  further attempt waits twice as long as the one before (1 s, 2 s, 4 s … up to
  MAX_BACKOFF_SECONDS), until a login succeeds. That is about a hundred guesses a day.
* And against the client address (MAX_ATTEMPTS a minute), as before.

A browser without the device cookie, during a flood, is kept out; the documented way back is
the one-time login link (`make login-link`), which no password limit touches. The counters
live in the cache: per process with the default in-memory cache (several workers allow a few
times more guesses), and they reset when lab restarts.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse

WINDOW_SECONDS = 60
MAX_ATTEMPTS = 10
FREE_FAILURES = 5
MAX_BACKOFF_SECONDS = 15 * 60
FAILURES_KEPT_SECONDS = 24 * 3600
DEVICE_COOKIE = "lab_login_device"
DEVICE_COOKIE_AGE = 365 * 24 * 3600
_SALT = "lab.accounts.login-device"


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    trusted_device: str = ""  # the device id when the request carries a valid device cookie
    retry_after: int = 0  # seconds until the next attempt may be made
    reason: str = ""


def _count(key: str) -> int:
    """One more attempt in the current window of `key`."""
    cache.add(key, 0, WINDOW_SECONDS)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, WINDOW_SECONDS)
        return 1


def _account_key(username: str) -> str:
    return f"login-failures:{username.strip().lower()}"


def device_of(request: HttpRequest, username: str) -> str:
    """The device id of a valid device cookie issued for `username`, else ""."""
    raw = request.COOKIES.get(DEVICE_COOKIE, "")
    if not raw:
        return ""
    try:
        value = signing.loads(raw, salt=_SALT, max_age=DEVICE_COOKIE_AGE)
    except signing.BadSignature:
        return ""
    if not isinstance(value, dict) or str(value.get("u", "")).lower() != username.strip().lower():
        return ""
    return str(value.get("d", ""))


def login_attempt_check(request: HttpRequest, username: str) -> Verdict:
    """Whether this attempt may be judged at all; counts it."""
    device = device_of(request, username)
    if device:
        if _count(f"login-device:{device}") > MAX_ATTEMPTS:
            return Verdict(False, device, WINDOW_SECONDS, "Too many login attempts from this browser.")
        return Verdict(True, device)
    failures, last = cache.get(_account_key(username), (0, 0.0))
    if failures >= FREE_FAILURES:
        wait = min(2 ** (failures - FREE_FAILURES), MAX_BACKOFF_SECONDS)
        remaining = int(last + wait - time.time() + 0.999)
        if remaining > 0:
            return Verdict(False, "", remaining, "Too many failed logins for this account.")
    if _count(f"login-attempts:{request.META.get('REMOTE_ADDR', '?')}") > MAX_ATTEMPTS:
        return Verdict(False, "", WINDOW_SECONDS, "Too many login attempts from this address.")
    return Verdict(True)


def login_failed(request: HttpRequest, username: str, verdict: Verdict) -> None:
    if verdict.trusted_device:
        return  # counted against the device in login_attempt_check
    failures, _last = cache.get(_account_key(username), (0, 0.0))
    cache.set(_account_key(username), (failures + 1, time.time()), FAILURES_KEPT_SECONDS)


def login_succeeded(request: HttpRequest, response: HttpResponse, username: str) -> None:
    """Clears the account's backoff and gives this browser its device cookie."""
    cache.delete(_account_key(username))
    device = device_of(request, username) or secrets.token_urlsafe(16)
    response.set_cookie(
        DEVICE_COOKIE,
        signing.dumps({"u": username.strip().lower(), "d": device}, salt=_SALT),
        max_age=DEVICE_COOKIE_AGE,
        httponly=True,
        samesite="Strict",
        secure=settings.SESSION_COOKIE_SECURE,
    )
