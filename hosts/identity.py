"""Which host this process is, and in which role (docs/architecture.md, "Several machines").

- `all` (the default, `make run`): web tier and runner of its own host at once. It serves its
  own runs in-process and relays the others to their hosts' runners.
- `web`: pages and sockets only; every run is relayed to the runner of its host.
- `runner` (`manage.py runner`): owns its host's tmux server, worktrees, agent homes and
  watchers; serves what the web tier relays, and refuses a run that lives elsewhere.
"""

from __future__ import annotations

from django.conf import settings

ALL, WEB, RUNNER = "all", "web", "runner"
ROLES = (ALL, WEB, RUNNER)

_role: str | None = None


def role() -> str:
    return _role or settings.LAB_ROLE


def become_runner() -> None:
    global _role
    _role = RUNNER


def host_name() -> str:
    return str(settings.LAB_HOST)


def serves(host: str) -> bool:
    """This process does the work of runs on `host` itself (their files are here)."""
    return role() != WEB and host == host_name()
