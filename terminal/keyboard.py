"""Who may type into a run's terminal: a grant on the run, taken by an explicit, CSRF-protected
click on the Terminal view, bound to the login that took it, for at most GRANT_S, and given
back by a click, a logout, or the run's end. One log line per takeover.

While a grant holds, the chat sends no keys (runs/services.py refuses with KeyboardHeld) and
every page of the run is told, so nobody's keys race anybody's.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import user_logged_out
from django.template.loader import render_to_string
from django.utils import timezone

from broadcast import groups
from runs.models import Run

log = logging.getLogger(__name__)

GRANT_S = 30 * 60  # a grant lasts this long at most; taking it again renews it
KEYBOARD_EVENT = "terminal.keyboard"  # {"type": KEYBOARD_EVENT}: the grant changed


def terminal_group(run_id: int) -> str:
    return f"terminal.{run_id}"


def session_hash(session_key: str) -> str:
    return hashlib.sha256(session_key.encode()).hexdigest()[:64]


class KeyboardTaken(Exception):
    """Someone else holds the keyboard: taking it needs the operator to say so."""


def holds(run: Run, session_key: str) -> bool:
    """Whether this login holds the run's keyboard now."""
    return (
        bool(session_key)
        and bool(run.keyboard_holder())
        and run.keyboard_session == session_hash(session_key)
    )


def take(run: Run, user: Any, session_key: str, *, force: bool = False) -> None:
    mine = session_hash(session_key)
    holder = run.keyboard_holder()
    if holder and run.keyboard_session != mine and not force:
        raise KeyboardTaken(holder)
    until = timezone.now() + timedelta(seconds=GRANT_S)
    Run.objects.filter(pk=run.pk).update(keyboard_user=user, keyboard_session=mine, keyboard_until=until)
    run.keyboard_user, run.keyboard_session, run.keyboard_until = user, mine, until
    log.info(
        "terminal: %s took the keyboard of run %s (%s)%s",
        user.get_username(),
        run.pk,
        run.name,
        f", from {holder}" if holder and force else "",
    )
    changed(run)


def give_back(run: Run, session_key: str = "") -> bool:
    """Release the grant (only this login's, when session_key is given). Whether one was."""
    rows = Run.objects.filter(pk=run.pk, keyboard_user__isnull=False)
    if session_key:
        rows = rows.filter(keyboard_session=session_hash(session_key))
    if not rows.update(keyboard_user=None, keyboard_session="", keyboard_until=None):
        return False
    run.keyboard_user, run.keyboard_session, run.keyboard_until = None, "", None
    log.info("terminal: the keyboard of run %s (%s) was given back", run.pk, run.name)
    changed(run)
    return True


def changed(run: Run) -> None:
    """Every page of the run learns who holds the keyboard: the run page's note (an
    out-of-band swap), the Terminal views' sockets (which then allow or refuse keys)."""
    layer = get_channel_layer()
    if layer is None:
        return
    note = render_to_string("runs/keyboard_note.html", {"run": run, "oob": True})
    try:
        async_to_sync(layer.group_send)(groups.run(run.pk), {"type": groups.HTML_EVENT, "html": note})
        async_to_sync(layer.group_send)(terminal_group(run.pk), {"type": KEYBOARD_EVENT})
    except Exception:
        log.warning("could not tell the pages of run %s who holds its keyboard", run.pk, exc_info=True)


def on_logged_out(sender: type, request: Any, user: Any, **kwargs: Any) -> None:
    key = getattr(getattr(request, "session", None), "session_key", None)
    if not key:
        return
    for run in Run.objects.filter(keyboard_session=session_hash(key)):
        give_back(run)


def connect() -> None:
    user_logged_out.connect(on_logged_out, dispatch_uid="lab-terminal-logout")
