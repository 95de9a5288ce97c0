"""The hosts as pages show them: the runs list, the new-run form, the Providers page."""

from __future__ import annotations

from dataclasses import dataclass

from hosts import identity
from hosts.models import Host


@dataclass(frozen=True)
class HostLine:
    name: str
    here: bool  # this process serves it
    up: bool
    status: str  # "up" or the true sentence about its silence
    live_runs: int | None  # None: not counted here
    load: float | None


def hosts_listed(counts: dict[str, int] | None = None) -> list[HostLine]:
    """Every registered host; empty on the one-host default (nothing to choose between)."""
    hosts = list(Host.objects.all())
    if not hosts or (len(hosts) == 1 and identity.serves(hosts[0].name)):
        return []
    lines = []
    for h in hosts:
        here = identity.serves(h.name)
        up = here or h.up
        n = None if counts is None else counts.get(h.name, 0)
        if here:
            status = "up (this process)"
        elif up:
            status = f"up, last seen {int(h.silent_for() or 0)} s ago"
        else:
            status = h.silence_text()
        lines.append(HostLine(h.name, here, up, status, n, h.load))
    return lines
