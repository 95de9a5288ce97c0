"""An open socket lives no longer than the login it was opened with.

A socket is authenticated once, at its handshake; the session may end later while the page
stays open. The consumers join the two groups named here, and this module tells them:

- a logout sends SESSION_ENDED to that session's group: its sockets close as logged out;
- any other change to the user's row that can end sessions (a new password changes the session
  auth hash, a deactivation, a deletion) sends SESSION_CHECK to the user's group: each socket of
  that user checks its own session again (`session_is_current`) and closes when it no longer
  holds. The browser that changed the password holds a new session by then, so such a close asks
  the page to reconnect, and the new handshake tells a logged-out page apart from that one.

A group name carries a hash of the session key, never the key: whoever can read the channel
layer (Redis) must not learn a key that logs in.
"""

from __future__ import annotations

import hashlib
import logging
from importlib import import_module
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
    user_logged_out,
)
from django.db.models.signals import post_delete, post_save
from django.utils.crypto import constant_time_compare

logger = logging.getLogger(__name__)

SESSION_ENDED = "session.ended"  # {"type": SESSION_ENDED}: the session logged out
SESSION_CHECK = "session.check"  # {"type": SESSION_CHECK}: check the session again


def session_group(session_key: str) -> str:
    return "session." + hashlib.sha256(session_key.encode()).hexdigest()[:40]


def user_group(user_pk: object) -> str:
    return f"user.{user_pk}"


def session_is_current(session_key: str) -> bool:
    """The session still logs its user in, as Django's get_user would decide on the next request
    (missing or expired, a user gone or inactive, a password changed since: no), without its
    side effects: get_user flushes a stale session and cycles the key of one signed with an old
    SECRET_KEY, which would log the browser out behind its back."""
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    data = store.load()  # {} when the session is missing or has expired
    try:
        user_id, backend_path = data[SESSION_KEY], data[BACKEND_SESSION_KEY]
    except KeyError:
        return False
    if backend_path not in settings.AUTHENTICATION_BACKENDS:
        return False
    user = load_backend(backend_path).get_user(user_id)
    stored = data.get(HASH_SESSION_KEY)
    if user is None or not isinstance(stored, str) or not stored:
        return False
    hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return any(constant_time_compare(stored, h) for h in hashes)


def _send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:
        # A channel layer that is down (Redis) must not fail the logout or the password change
        # itself: the sockets' own periodic check (live/consumers.py) still ends them.
        logger.warning("could not tell the open sockets of %s that their login changed", group, exc_info=True)


def on_logged_out(sender: type, request: Any, user: Any, **kwargs: Any) -> None:
    # Sent before the session is flushed: its key is still the browser's.
    key = getattr(getattr(request, "session", None), "session_key", None)
    if key:
        _send(session_group(key), {"type": SESSION_ENDED})


def on_user_changed(sender: type, instance: Any, update_fields: Any = None, **kwargs: Any) -> None:
    # A login stamps last_login and nothing else: no session can have ended by it.
    if update_fields is not None and set(update_fields) <= {"last_login"}:
        return
    _send(user_group(instance.pk), {"type": SESSION_CHECK})


def connect() -> None:
    user_logged_out.connect(on_logged_out, dispatch_uid="lab-sockets-logout")
    user_model = get_user_model()
    post_save.connect(on_user_changed, sender=user_model, dispatch_uid="lab-sockets-user-saved")
    post_delete.connect(on_user_changed, sender=user_model, dispatch_uid="lab-sockets-user-deleted")
