"""Which host this process is, and in which role (docs/architecture.md, "Several machines").

- `all` (the default, `make run`): web tier and runner of its own host at once. It serves its
  own runs in-process and relays the others to their hosts' runners.
- `web`: pages and sockets only; every run is relayed to the runner of its host.
- `runner` (`manage.py runner`): owns its host's tmux server, worktrees, agent homes and
  watchers; serves what the web tier relays, and refuses a run that lives elsewhere.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from django.conf import settings

ALL, WEB, RUNNER = "all", "web", "runner"
HOST_NAME = r"[a-z0-9][a-z0-9-]{0,39}"  # a host's name: it is part of URLs and channel names

_role: str | None = None
# What a runner's request handling acts as: set for the tasks (and the threads they start,
# which copy the context) that serve one relayed message, so that a runner in a process that
# is also something else (a test) never relays what it was sent.
_acting: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("lab_host", default=None)


def role() -> str:
    acting = _acting.get()
    return acting[1] if acting else (_role or settings.LAB_ROLE)


def become_runner() -> None:
    global _role
    _role = RUNNER


def host_name() -> str:
    acting = _acting.get()
    return acting[0] if acting else str(settings.LAB_HOST)


@contextlib.contextmanager
def acting_as_runner(host: str) -> Iterator[None]:
    token = _acting.set((host, RUNNER))
    try:
        yield
    finally:
        _acting.reset(token)


def serves(host: str) -> bool:
    """This process does the work of runs on `host` itself (their files are here)."""
    return role() != WEB and host == host_name()
