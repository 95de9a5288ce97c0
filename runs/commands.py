"""The commands a run's chat may offer: the provider's catalog, chat-safe rows only, cached.

Generic: it reaches the provider only through the registry and the seam (DESIGN.md), so it
never knows which CLI it is listing or which command clears.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.core.cache import cache

from providers.registry import get_provider
from providers.schema import CommandRole, CommandSpec

# DESIGN.md: "cached ~30 s". Long enough that typing "/" repeatedly never rereads the worktree,
# short enough that a command file added mid-run shows up without a restart.
CACHE_SECONDS = 30


def _cache_key(provider_id: str, worktree: str) -> str:
    # A worktree path is too long and too free-form for every cache backend's key rules.
    digest = hashlib.sha256(f"{provider_id}\0{worktree}".encode()).hexdigest()[:32]
    return f"runs:commands:{digest}"


def run_commands(*, provider_id: str, worktree: str) -> list[CommandSpec]:
    """The chat-safe commands ``provider_id`` offers in ``worktree``, in the provider's order."""
    if not worktree:
        # Path("") is the server's cwd: never list lab's own checkout as a run's worktree.
        raise ValueError("a run without a worktree has no commands")
    key = _cache_key(provider_id, worktree)
    rows: list[CommandSpec] | None = cache.get(key)
    if rows is None:
        catalog = get_provider(provider_id).commands(Path(worktree))
        # The provider returns every row honestly; filtering is this layer's job (issue 6).
        rows = [row for row in catalog if row.chat_safe]
        cache.set(key, rows, CACHE_SECONDS)
    return rows


def clear_command(rows: list[CommandSpec]) -> CommandSpec | None:
    """The row the "New conversation" button sends, or None when the provider marks none."""
    return next((row for row in rows if row.role is CommandRole.CLEAR), None)
