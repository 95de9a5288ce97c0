"""A host: one machine whose runner owns the tmux server, the worktrees, the agent homes and
the transcript watchers of the runs started there (docs/architecture.md, "Several machines").

The row says who may join as the host's runner (a hash of its credential) and how it was last
heard from (its heartbeat). Nothing about a run's files is stored here.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import secrets

from django.db import models
from django.utils import timezone

from hosts.identity import HOST_NAME

# A runner beats every HEARTBEAT_S; a host not heard from for STALE_AFTER_S is unreachable.
HEARTBEAT_S = 2.0
STALE_AFTER_S = 8.0
HOST_NAME_RE = rf"^{HOST_NAME}$"


def credential_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_credential() -> str:
    return secrets.token_urlsafe(32)


class Host(models.Model):
    name = models.CharField(max_length=40, unique=True)
    # sha256 of the runner's credential (LAB_RUNNER_TOKEN); "" for the process that is web
    # tier and runner at once, which never joins over the channel layer.
    credential = models.CharField(max_length=64, blank=True)
    last_seen = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)  # the current runner's start
    load = models.FloatField(null=True, blank=True)  # its 1-minute load average
    cpus = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def accepts(self, token: str) -> bool:
        return bool(self.credential) and hmac.compare_digest(self.credential, credential_hash(token))

    def silent_for(self, now: datetime.datetime | None = None) -> float | None:
        """Seconds since the runner last beat (None: never)."""
        if self.last_seen is None:
            return None
        return max(0.0, ((now or timezone.now()) - self.last_seen).total_seconds())

    @property
    def up(self) -> bool:
        silent = self.silent_for()
        return silent is not None and silent < STALE_AFTER_S

    def silence_text(self) -> str:
        """The true sentence about a host that does not answer."""
        silent = self.silent_for()
        if silent is None:
            return f"host {self.name} has never answered: is its runner started?"
        return f"host {self.name} has not answered for {_duration(silent)}"


def _duration(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h"
