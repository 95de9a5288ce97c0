"""A run's changes page: what the agent changed in its worktree since the run's base commit
(seeding/changes.py), highlighted (runs/highlight.py)."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET

from providers.bounded import put_bounded
from runs import highlight, ship_views
from runs.models import Run
from seeding import changes

SECTION_TITLES = {
    "committed": "Committed on the branch",
    "staged": "Staged",
    "unstaged": "Not staged",
    "untracked": "Untracked",
}


@dataclass(frozen=True)
class ShownFile:
    change: changes.FileChange
    section: str
    # (kind, HTML, old line number, new line number): a number is 0 where the side has no line.
    rows: list[tuple[str, SafeString, int, int]]


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def numbered(change: changes.FileChange) -> list[tuple[int, int]]:
    """Each diff line's number in the old and the new file, so a comment can name `path:line`.
    A diff without a hunk header (an untracked file) counts from 1."""
    old = new = 1
    out = []
    for line in change.lines:
        hunk = _HUNK.match(line.text) if line.kind == "hunk" else None
        if hunk:
            old, new = int(hunk.group(1)), int(hunk.group(2))
        if line.kind == "add":
            out.append((0, new))
            new += 1
        elif line.kind == "del":
            out.append((old, 0))
            old += 1
        elif line.kind == "ctx":
            out.append((old, new))
            old, new = old + 1, new + 1
        else:
            out.append((0, 0))
    return out


def shown(change: changes.FileChange, section: str) -> ShownFile:
    # Pygments escaped every line (runs/highlight.rows): safe to mark.
    rows = [
        (kind, mark_safe(html), old, new)  # noqa: S308
        for (kind, html), (old, new) in zip(highlight.rows(change), numbered(change), strict=True)
    ]
    return ShownFile(change, section, rows)


# The last page read per run, by the worktree's signature: every open Changes tab refreshes when
# a turn ends, and all but the first get the same answer without reading git again.
_CACHE_RUNS = 8
_cache: dict[int, tuple[str, dict[str, object]]] = {}
_locks: dict[int, threading.Lock] = {}
_guard = threading.Lock()


def _read(run: Run) -> dict[str, object]:
    """The page's context, read once per state of the worktree (tabs refreshing together wait
    for the first and share its read)."""
    with _guard:
        lock = _locks.setdefault(run.pk, threading.Lock())
    with lock:
        now = changes.signature(Path(run.worktree)) if changes.is_worktree(run.worktree) else None
        seen = f"{run.base_commit}:{now}" if now is not None else None
        with _guard:
            cached = _cache.get(run.pk)
        if seen is not None and cached is not None and cached[0] == seen:
            return cached[1]
        context = _read_now(run)
        with _guard:
            if seen is not None and "found" in context:
                put_bounded(_cache, run.pk, (seen, context), _CACHE_RUNS)
            else:
                _cache.pop(run.pk, None)
            if len(_locks) > 4 * _CACHE_RUNS:  # locks of runs not viewed lately
                for pk in [pk for pk in _locks if pk not in _cache and pk != run.pk]:
                    del _locks[pk]
        return context


def _read_now(run: Run) -> dict[str, object]:
    try:
        found = changes.worktree_changes(
            worktree=Path(run.worktree),
            base=run.base_commit,
            repository=Path(run.repository),
            branch=run.branch,
        )
    except changes.ChangesError as exc:
        return {"changes_error": str(exc)}
    sections = [
        (
            name,
            SECTION_TITLES[name],
            [shown(f, name) for f in found.sections[name]],
            found.hidden.get(name, 0),
        )
        for name in changes.SECTIONS
        if name in found.sections
    ]
    return {"found": found, "sections": sections}


@require_GET
async def run_changes(request: HttpRequest, run_id: int) -> HttpResponse:
    run = await sync_to_async(get_object_or_404)(Run, pk=run_id)
    context = {
        "run": run,
        "full_lines": changes.FULL_LINES,
        **await sync_to_async(_read, thread_sensitive=False)(run),
    }
    # The page refreshes its changes in place when a turn ends (static/lab/feed.js).
    template = "runs/changes.html#changes" if request.headers.get("HX-Request") else "runs/changes.html"
    if not request.headers.get("HX-Request"):
        context |= await sync_to_async(ship_views.ship_context, thread_sensitive=False)(run)
    return render(request, template, context)


@require_GET
def run_changes_file(request: HttpRequest, run_id: int) -> HttpResponse:
    """One file's whole diff ("load the rest")."""
    run = get_object_or_404(Run, pk=run_id)
    section, path = request.GET.get("section", ""), request.GET.get("path", "")
    try:
        change = changes.one_file(
            worktree=Path(run.worktree), base=run.base_commit, section=section, path=path
        )
    except changes.ChangesError as exc:
        return render(request, "runs/changes.html#file_error", {"error": str(exc)}, status=404)
    return render(
        request,
        "runs/changes.html#file",
        {
            "run": run,
            "file": shown(change, section),
            "open": True,
            "whole": True,
            "full_lines": changes.FULL_LINES,
        },
    )
