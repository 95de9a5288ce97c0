"""The operator's feed: every live run's state, on every page, so a run that waits is noticed
without watching it.

The run's watcher calls `state_changed` when the state it derived changes; the feed tells every
logged-in page a small JSON entry the page's script keeps (the tab title and favicon count the
runs that wait, an opted-in browser notification says which run asks, and a runs list asks for
its rows again: the list's one writer is its own view). A page that (re)connects is sent the
whole `snapshot` first, so one woken from sleep catches up. lab has no per-user runs (every operator
sees every run), so the feed is one group every authenticated socket joins.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from broadcast import groups
from providers.schema import DialogKind, RunState
from push import sender as push_sender
from push.payload import Push, first_line
from runs import services
from runs.models import Run
from runs.rows import WAITING_MAX, Row, row, rows_of, waiting_for
from runs.runview import RunView

FEED_GROUP = groups.FEED
# A turn that ran at least this long is worth a "finished" notification; a quick answer is not.
TURN_NOTIFY_S = 5.0

# When each run's current turn began, as this process's watcher saw it (one watcher leads a
# run across every worker, so its own clock is the right one).
_working_since: dict[int, float] = {}


@dataclass(frozen=True)
class Entry:
    """What a page keeps about one run."""

    id: int
    name: str
    state: str
    url: str
    waiting: str  # what the run waits for ("" unless it asks), one short line
    activity: str  # ISO 8601: the last write to its transcript, or its start


def entry(r: Row) -> Entry:
    return Entry(
        id=r.run.pk,
        name=r.run.name,
        state=r.state,
        url=r.run.get_absolute_url(),
        waiting=r.waiting or r.limit,
        activity=r.activity.isoformat(),
    )


def snapshot() -> list[Entry]:
    """Every live run's entry, for a page that has just connected."""
    return [entry(r) for r in rows_of(list(Run.objects.live()))]


def frame(*, runs: list[Entry], snapshot: bool = False, notify: str = "") -> str:
    """The JSON text frame a page's script reads (static/lab/feed.js); htmx-ws never swaps it."""
    return json.dumps({"feed": {"runs": [asdict(e) for e in runs], "snapshot": snapshot, "notify": notify}})


def notification(
    run_id: int, previous: str, state: str, *, now: float | None = None, limited: bool = False
) -> str:
    """What the operator is told about this change: "question", "needs_input", "finished",
    "limit" (the turn stopped on a usage limit, however short it was), or "" for nothing. A
    watcher that has just started (no previous state) tells nothing: the page's count shows
    what waits."""
    now = time.monotonic() if now is None else now
    if state == RunState.WORKING:
        if previous != RunState.WORKING:
            _working_since[run_id] = now
        return ""
    began = _working_since.pop(run_id, None)
    if not previous:
        return ""
    if state in services.DIALOG_STATES:
        return state
    if state == RunState.IDLE and previous == RunState.WORKING and limited:
        return "limit"
    if state == RunState.IDLE and previous == RunState.WORKING and began is not None:
        return "finished" if now - began >= TURN_NOTIFY_S else ""
    return ""


async def state_changed(layer: Any, view: RunView, *, previous: str) -> None:
    """The watcher's hook: the run's state changed from `previous` ("" when the watcher has just
    started) to the state of the wake's view. Tells the runs lists and every page's feed, from
    that view: nothing is read or derived again."""
    if layer is None:
        return
    r = row(view)
    notify = notification(view.run.pk, previous, r.state, limited=bool(r.limit))
    await layer.group_send(
        FEED_GROUP, {"type": groups.FEED_EVENT, "text": frame(runs=[entry(r)], notify=notify)}
    )
    if notify:
        # The same event to browsers with no lab tab open: queued, sent by another thread.
        push_sender.submit(push_for(view, r, notify))


def push_for(view: RunView, r: Row, kind: str) -> Push:
    """The push for this change: the run's name, the kind, and for a question only its first line
    (the row's "waiting for" joins every line of it)."""
    text = r.waiting
    dialog = view.dialog
    if dialog is not None and dialog.kind != DialogKind.PLAN and r.state in services.DIALOG_STATES:
        first = dialog.all_questions[0] if dialog.all_questions else None
        asked = first_line(
            ((first.prompt or first.header) if first is not None else "") or dialog.prompt or ""
        )
        text = asked[:WAITING_MAX] if asked else waiting_for(dialog, r.state)
    return Push(run_id=r.run.pk, name=r.run.name, kind=kind, text=text, url=r.run.get_absolute_url())
