"""The installable app (the manifest, the service worker) and Web Push's pages: the key a
browser subscribes with, its subscription, and the account page that lists and revokes them."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from push import sender
from push.models import Subscription

# The static shell the service worker keeps for a fast start and an installed app: what every
# page loads, nothing else. Pages, transcripts and diffs always come from the network.
SHELL = (
    "lab/lab.css",
    "lab/lab.js",
    "lab/dialog.js",
    "lab/commands.js",
    "lab/connection.js",
    "lab/feed.js",
    "lab/push.js",
    "django_htmx/htmx-2.min.js",
    "django_htmx/ext/hx-ws-2.min.js",
    "lab/icons/icon-192.png",
)
ICONS = (
    (192, "lab/icons/icon-192.png", "any"),
    (512, "lab/icons/icon-512.png", "any"),
    (512, "lab/icons/icon-maskable-512.png", "maskable"),
)
BODY_MAX = 4096


@login_not_required  # a browser fetches the manifest without cookies
@require_GET
def manifest(request: HttpRequest) -> HttpResponse:
    data = {
        "name": "lab",
        "short_name": "lab",
        "description": "Chat with coding agents running in tmux on git worktrees.",
        "id": "/",
        "start_url": reverse("runs:list"),
        "scope": "/",
        "display": "standalone",
        "background_color": "#14181d",
        "theme_color": "#14181d",
        "icons": [
            {"src": static(path), "sizes": f"{size}x{size}", "type": "image/png", "purpose": purpose}
            for size, path, purpose in ICONS
        ],
    }
    return HttpResponse(json.dumps(data), content_type="application/manifest+json")


def _shell_version() -> str:
    """A hash of the shell's files: a changed file makes a new worker, which drops the old cache."""
    digest = hashlib.sha256()
    for name in SHELL:
        found = finders.find(name)
        if isinstance(found, str):
            with open(found, "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()[:16]


@login_not_required  # holds nothing private; its scope is the whole site, so it is served at /
@require_GET
def service_worker(request: HttpRequest) -> HttpResponse:
    response = render(
        request,
        "push/sw.js",
        {
            "shell": json.dumps([static(name) for name in SHELL]),
            "version": _shell_version(),
            "icon": static("lab/icons/icon-192.png"),
        },
        content_type="text/javascript",
    )
    response["Service-Worker-Allowed"] = "/"
    return response


def _status() -> tuple[bool, str]:
    """Whether this lab pushes, and if not, why (said on the account page)."""
    if settings.LAB_PUSH:
        return True, ""
    return False, (
        "Push is off: browsers allow it only on an https origin or on this machine (loopback), "
        f"and lab is served at {settings.LAB_ORIGIN}. Put TLS in front and set LAB_ORIGIN to the "
        "https address, or set LAB_PUSH=true."
    )


@require_GET
def key(request: HttpRequest) -> JsonResponse:
    """The applicationServerKey a browser subscribes with, when push is on."""
    on, why = _status()
    return JsonResponse({"enabled": on, "key": sender.public_key() if on else "", "reason": why})


class BadSubscription(ValueError):
    pass


def _b64(value: object, size: int, what: str) -> str:
    if not isinstance(value, str) or len(value) > 200:
        raise BadSubscription(f"{what} is missing")
    try:
        # validate: the lenient decoder drops characters outside the alphabet instead of refusing
        raw = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise BadSubscription(f"{what} is not base64url") from None
    if len(raw) != size:
        raise BadSubscription(f"{what} must be {size} bytes, got {len(raw)}")
    return value


def _parse(body: bytes) -> tuple[str, str, str]:
    """(endpoint, p256dh, auth) from a PushSubscription's JSON, or BadSubscription saying why."""
    if len(body) > BODY_MAX:
        raise BadSubscription("the subscription is too large")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadSubscription("the subscription is not JSON") from None
    if not isinstance(data, dict):
        raise BadSubscription("the subscription is not a JSON object")
    endpoint = data.get("endpoint")
    keys = data.get("keys")
    if not isinstance(keys, dict):
        keys = {}
    schemes = ("https", "http") if settings.LAB_PUSH_HTTP_ENDPOINTS else ("https",)
    if not isinstance(endpoint, str) or len(endpoint) > 2048:
        raise BadSubscription("the endpoint is missing")
    parts = urlsplit(endpoint)
    if parts.scheme not in schemes or not parts.hostname:
        raise BadSubscription("the endpoint must be an https URL of a push service")
    p256dh = _b64(keys.get("p256dh"), 65, "keys.p256dh")
    auth = _b64(keys.get("auth"), 16, "keys.auth")
    return endpoint, p256dh, auth


def _label(request: HttpRequest) -> str:
    """A short name for the browser (the account page's list), from its User-Agent."""
    agent = request.headers.get("User-Agent", "")
    browser = next((b for b in ("Edg", "Firefox", "Chrome", "Safari") if b in agent), "a browser")
    system = next((s for s in ("Android", "iPhone", "iPad", "Mac OS", "Windows", "Linux") if s in agent), "")
    browser = {"Edg": "Edge", "Chrome": "Chrome" if "Chromium" not in agent else "Chromium"}.get(
        browser, browser
    )
    return f"{browser} on {system}" if system else browser


def _operator(request: HttpRequest) -> User:
    # LoginRequiredMiddleware let only a logged-in operator this far.
    assert isinstance(request.user, User)
    return request.user


@require_POST
def subscribe(request: HttpRequest) -> JsonResponse:
    """Stores this browser's subscription (its "Notify me" click); the same endpoint again updates it."""
    if not settings.LAB_PUSH:
        return JsonResponse({"error": _status()[1]}, status=409)
    try:
        endpoint, p256dh, auth = _parse(request.body)
    except BadSubscription as exc:
        return JsonResponse({"error": f"Not subscribed: {exc}."}, status=400)
    Subscription.objects.update_or_create(
        endpoint=endpoint,
        defaults={
            "user": _operator(request),
            "p256dh": p256dh,
            "auth": auth,
            "label": _label(request),
            "last_error": "",
        },
    )
    return JsonResponse({"subscribed": True}, status=201)


@require_POST
def unsubscribe(request: HttpRequest) -> JsonResponse:
    """This browser turned notifications off: its subscription goes."""
    try:
        data = json.loads(request.body[:BODY_MAX])
    except (ValueError, UnicodeDecodeError):
        data = None
    endpoint = data.get("endpoint") if isinstance(data, dict) else None
    if not isinstance(endpoint, str):
        return JsonResponse({"error": "Say which endpoint to remove."}, status=400)
    deleted, _ = Subscription.objects.filter(user=_operator(request), endpoint=endpoint).delete()
    return JsonResponse({"removed": bool(deleted)})


@require_GET
def devices(request: HttpRequest) -> HttpResponse:
    """The account page: the browsers that get this operator's pushes, each revocable."""
    on, why = _status()
    subs = Subscription.objects.filter(user=_operator(request))
    ttl = settings.LAB_PUSH_TTL
    kept = f"{ttl // 60} minutes" if ttl >= 120 else f"{ttl} seconds"
    context = {"subscriptions": subs, "push_on": on, "push_off_reason": why, "ttl": kept}
    return render(request, "push/devices.html", context)


@require_POST
def revoke(request: HttpRequest, sub_id: int) -> HttpResponse:
    get_object_or_404(Subscription, pk=sub_id, user=_operator(request)).delete()
    return redirect("push:devices")
