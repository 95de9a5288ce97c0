"""The runs list's row: what one line of the list shows of a run (its state, what it waits for,
its last activity, its agent), from the run's view. The list page draws them (runs/views.py)
and the live feed pushes them again when a watcher sees a run's state change (live/feed.py).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync

from hosts import client, identity
from hosts.selectors import HostLine, hosts_listed
from providers.errors import UnknownProvider
from providers.schema import Dialog, DialogKind, RunState, Usage
from runs import services
from runs.limits import context_text, limit_text, quota_text
from runs.models import Run
from runs.runview import RunView, run_view

WAITING_MAX = 120  # characters of "waiting for: …"


@dataclass(frozen=True)
class Row:
    """One line of the runs list."""

    run: Run
    state: str
    waiting: str
    activity: datetime.datetime
    agent: str = ""  # the provider's display name, in its own column (not under the branch)
    limit: str = ""  # "Usage limit reached · resets at 14:05 UTC" while the run stopped on one
    usage: Usage | None = None  # what its CLI last reported (context; the account's quota)

    @property
    def context(self) -> str:
        return context_text(self.usage)


def waiting_for(dialog: Dialog | None, state: str) -> str:
    """One short line saying what the run waits for."""
    if state not in services.DIALOG_STATES:
        return ""
    if dialog is None:
        return "its terminal" if state == RunState.NEEDS_INPUT else "an answer"
    if dialog.kind == DialogKind.PLAN:
        text = "approval of a plan"
    else:
        first = dialog.all_questions[0] if dialog.all_questions else None
        text = (first.prompt or first.header) if first is not None else ""
        text = " ".join((text or dialog.prompt or "an answer").split())
    return text if len(text) <= WAITING_MAX else text[: WAITING_MAX - 1] + "…"


def last_activity(run: Run) -> datetime.datetime:
    """When the agent last wrote to its transcript (the run's start before it has one)."""
    try:
        mtime = os.stat(run.transcript_path).st_mtime if run.transcript_path else None
    except OSError:
        mtime = None
    if mtime is None:
        return run.created_at
    return datetime.datetime.fromtimestamp(mtime, tz=datetime.UTC)


def row(view: RunView) -> Row:
    """The run's row, from its view (the watcher's wake, or one read for the runs list)."""
    state = str(view.state)
    return Row(
        run=view.run,
        state=state,
        waiting=waiting_for(view.dialog, state),
        activity=last_activity(view.run),
        agent=view.provider_name,
        limit=limit_text(view.limit) if view.limit is not None else "",
        usage=view.usage,
    )


def run_row(run: Run) -> Row:
    """The row of a run the caller has no view of (the runs list, a page's snapshot). An ended
    run whose provider is no longer enabled still has its row, with the provider's id."""
    try:
        provider = run.provider
    except UnknownProvider:
        if not run.is_ended:
            raise
        ended = str(RunState.ENDED)
        return Row(run=run, state=ended, waiting="", activity=last_activity(run), agent=run.provider_id)
    return row(run_view(run, limit=1, read=not run.is_ended, provider=provider))


def account_quotas(rows: list[Row]) -> list[tuple[str, str]]:
    """The account's quota once per agent (it is the account's, not a run's): from the live
    run whose CLI reported last; "not reported" when none of them said (an API key)."""
    latest: dict[str, Usage | None] = {}
    for r in rows:
        if r.run.is_ended or r.usage is None:
            continue
        seen = latest.get(r.agent)
        if seen is None or r.usage.at_ns > seen.at_ns:
            latest[r.agent] = r.usage
    return [(agent, quota_text(usage)) for agent, usage in sorted(latest.items())]


# --- rows of runs on other hosts ----------------------------------------------------------------

UNREACHABLE = "unreachable"  # the row's state while its host does not answer


def rows_data(run_ids: list[int]) -> list[dict[str, object]]:
    """The rows of this host's runs, as the web tier's call asks for them (JSON)."""
    out: list[dict[str, object]] = []
    for run in Run.objects.filter(pk__in=run_ids, host=identity.host_name()):
        r = run_row(run)
        out.append(
            {
                "id": run.pk,
                "ended": run.is_ended,
                "state": r.state,
                "waiting": r.waiting,
                "activity": r.activity.isoformat(),
                "agent": r.agent,
                "limit": r.limit,
                "usage": dataclasses.asdict(r.usage) if r.usage is not None else None,
            }
        )
    return out


def row_from(run: Run, data: dict[str, Any]) -> Row:
    usage = data.get("usage")
    return Row(
        run=run,
        state=str(data["state"]),
        waiting=str(data.get("waiting", "")),
        activity=datetime.datetime.fromisoformat(str(data["activity"])),
        agent=str(data.get("agent", "")),
        limit=str(data.get("limit", "")),
        usage=Usage(**usage) if isinstance(usage, dict) else None,
    )


def unreachable_row(run: Run, why: str) -> Row:
    """A run whose host does not answer: shown, neither hidden nor ended, and saying why."""
    if run.is_ended:
        return Row(
            run=run, state=str(RunState.ENDED), waiting="", activity=run.created_at, agent=run.provider_id
        )
    return Row(
        run=run, state=UNREACHABLE, waiting="", activity=run.created_at, agent=run.provider_id, limit=why
    )


ROWS_TIMEOUT_S = 3.0


def rows_of(runs: list[Run]) -> list[Row]:
    """Every run's row, in the order given: this host's from their views; another host's from
    its runner (one call per host), or unreachable when it does not answer in time."""
    mine = [r for r in runs if identity.serves(r.host)]
    rows: dict[int, Row] = {r.pk: run_row(r) for r in mine}
    others: dict[str, list[Run]] = {}
    for r in runs:
        if r.pk not in rows:
            others.setdefault(r.host, []).append(r)
    for host, its in others.items():
        rows.update(_remote_rows(host, its))
    return [rows[r.pk] for r in runs]


def _remote_rows(host: str, runs: list[Run]) -> dict[int, Row]:
    by_id = {r.pk: r for r in runs}
    try:
        data = async_to_sync(client.call)(host, "rows", {"run_ids": list(by_id)}, timeout=ROWS_TIMEOUT_S)
    except (client.HostSilent, client.RelayFailed) as exc:
        return {pk: unreachable_row(r, str(exc)) for pk, r in by_id.items()}
    out = {pk: unreachable_row(r, f"host {host} did not report this run") for pk, r in by_id.items()}
    for item in data or []:
        run = by_id.get(int(item["id"]))
        if run is not None:
            out[run.pk] = row_from(run, item)
    return out


def host_lines() -> list[HostLine]:
    """Every host with its count of live runs (empty on the one-host default)."""
    from django.db.models import Count

    counts = dict(Run.objects.live().values("host").annotate(n=Count("pk")).values_list("host", "n"))
    return hosts_listed(counts)
