"""The commands a run's chat may offer: the provider's catalog, chat-safe rows only, cached.

Generic: it reaches the provider only through the registry and the seam (docs/architecture.md), so it
never knows which CLI it is listing or which command clears.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.core.cache import cache

from providers.registry import get_provider
from providers.schema import CommandRole, CommandSpec

# Cached ~30 s. Long enough that typing "/" repeatedly never rereads the worktree,
# short enough that a command file added mid-run shows up without a restart.
CACHE_SECONDS = 30


def _cache_key(provider_id: str, worktree: str) -> str:
    # A worktree path is too long and too free-form for every cache backend's key rules.
    digest = hashlib.sha256(f"{provider_id}\0{worktree}".encode()).hexdigest()[:32]
    return f"runs:commands:{digest}"


def _catalog(provider_id: str, worktree: str) -> list[CommandSpec]:
    """Every row the provider lists for ``worktree``, chat-safe or not, cached."""
    if not worktree:
        # Path("") is the server's cwd: never list lab's own checkout as a run's worktree.
        raise ValueError("a run without a worktree has no commands")
    key = _cache_key(provider_id, worktree)
    rows: list[CommandSpec] | None = cache.get(key)
    if rows is None:
        rows = get_provider(provider_id).commands(Path(worktree))
        cache.set(key, rows, CACHE_SECONDS)
    return rows


def run_commands(*, provider_id: str, worktree: str) -> list[CommandSpec]:
    """The chat-safe commands ``provider_id`` offers in ``worktree``, in the provider's order."""
    # The provider returns every row honestly; filtering is this layer's job (docs/providers.md,
    # `commands(worktree)`).
    return [row for row in _catalog(provider_id, worktree) if row.chat_safe]


def command_refusal(*, provider_id: str, worktree: str, text: str) -> str:
    """Why a typed command line may not be sent from the chat ("" when it may): a row the
    catalog marks not chat-safe opens a screen lab cannot drive or fights lab's session.
    A name the catalog does not list, under its own name or an alias, is the CLI's to answer
    ("Unknown command", or text)."""
    if not text.startswith("/") or not worktree:
        return ""
    name = text[1:].split(maxsplit=1)[0] if text[1:].strip() else ""
    rows = _catalog(provider_id, worktree)
    row = next((r for r in rows if r.name == name), None)
    # An unlisted alias runs the same command (/quit is /exit), so it is refused the same way.
    row = row or next((r for r in rows if name in r.aliases), None)
    if row is None and name:
        return _completion_refusal(provider_id, name, rows)
    if row is None or row.chat_safe:
        return ""
    typed = f"/{name}" if row.name == name else f"/{name} is /{row.name} by another name, and"
    return (
        f"{typed} is not available from the chat: it {row.reason}."
        if row.reason
        else (f"{typed} is not available from the chat.")
    )


def _completion_refusal(provider_id: str, name: str, rows: list[CommandSpec]) -> str:
    """A name no command has may still run one: the CLIs may complete a command from its first
    letters when Enter follows (seen live: /qu and /ex pasted with Enter ended Claude Code, /qu
    ended Codex and /e opened its /experimental; with Enter pressed once Codex's menu was drawn,
    /qu was "Unrecognized"). Which command, and whether, is the CLI's affair and its timing, so
    a beginning that could complete to a command lab refuses is refused."""
    begun = [r for r in rows if any(n.startswith(name) for n in (r.name, *r.aliases))]
    refused = next((r for r in begun if not r.chat_safe), None)
    if refused is None:
        return ""
    cli = get_provider(provider_id).display_name()
    why = f": it {refused.reason}" if refused.reason else ""
    return (
        f"/{name} is not sent from the chat: {cli} may complete it to a command it begins, such as "
        f"/{refused.name}, which is not available from the chat{why}."
    )


def clear_command(rows: list[CommandSpec]) -> CommandSpec | None:
    """The row the "New conversation" button sends, or None when the provider marks none."""
    return next((row for row in rows if row.role is CommandRole.CLEAR), None)


MENU_MAX = 50  # rows the composer's menu shows at most


def menu_rows(rows: list[CommandSpec], query: str) -> list[CommandSpec]:
    """The composer's menu for "/<query>": names that start with it first, then those that
    contain it, each in catalog order."""
    q = query.lower()
    starts = [r for r in rows if r.name.lower().startswith(q)]
    contains = [r for r in rows if q in r.name.lower() and not r.name.lower().startswith(q)]
    return (starts + contains)[:MENU_MAX]
