"""Whether a runner may join as a host: a registered host and its own credential."""

from __future__ import annotations

from django.utils import timezone

from hosts.models import Host

MIN_CREDENTIAL = 32
# Credentials a runner is refused with whatever the database says: placeholders people copy.
DEFAULTS = frozenset({"changeme", "change-me", "secret", "token", "password", "default", "lab"})


class JoinRefused(Exception):
    pass


def join(name: str, token: str) -> Host:
    """The host's row, its runner's start recorded; JoinRefused says why it may not join."""
    if not token:
        raise JoinRefused("LAB_RUNNER_TOKEN is empty: a runner joins only with its host's credential.")
    if token.lower() in DEFAULTS or len(token) < MIN_CREDENTIAL:
        raise JoinRefused(
            f"LAB_RUNNER_TOKEN is a placeholder or shorter than {MIN_CREDENTIAL} characters: use the "
            "credential `manage.py host add NAME` printed."
        )
    host = Host.objects.filter(name=name).first()
    if host is None:
        raise JoinRefused(f"host {name!r} is not registered: run `manage.py host add {name}` first.")
    if not host.accepts(token):
        raise JoinRefused(f"LAB_RUNNER_TOKEN is not host {name!r}'s credential.")
    Host.objects.filter(pk=host.pk).update(started_at=timezone.now())
    return host
