"""The run page's scheduled messages: continue at a limit's reset (the toggle on the limit's
message) and a message at a time the operator picks; each answer replaces what asked."""

from __future__ import annotations

import datetime

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from runs import schedule
from runs.models import Run
from runs.runview import run_view
from runs.views import in_place


def _section(request: HttpRequest, run: Run, *, status: int = 200, **extra: object) -> HttpResponse:
    context = {"run": run, "scheduled": schedule.listed(run), **extra}
    return in_place(render(request, "runs/schedule.html", context, status=status), "outerHTML")


@require_POST
def run_continue(request: HttpRequest, run_id: int) -> HttpResponse:
    """The toggle on the limit's message: the panel again, saying what lab will do."""
    run = get_object_or_404(Run, pk=run_id)
    schedule.set_continue(run=run, on=request.POST.get("on") == "1")
    context = run_view(run, limit=1).panel_context()
    return in_place(render(request, "runs/detail.html#panel", context), "outerHTML")


def parse_time(value: str) -> datetime.datetime:
    """A datetime-local value ("2026-12-05T02:00"), in lab's time zone (the form says which)."""
    try:
        naive = datetime.datetime.fromisoformat(value.strip())
    except ValueError:
        raise schedule.ScheduleRefused("Choose the date and time to send it at.") from None
    if naive.tzinfo is not None:
        return naive
    return timezone.make_aware(naive, timezone.get_current_timezone())


@require_POST
def run_schedule(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    text, at = request.POST.get("text", ""), request.POST.get("at", "")
    try:
        schedule.schedule(run=run, text=text, at=parse_time(at))
    except schedule.ScheduleRefused as exc:
        # 422 with the draft kept: the operator fixes the time or the text, nothing is lost.
        return _section(request, run, status=422, schedule_error=str(exc), draft_text=text, draft_at=at)
    return _section(request, run)


@require_POST
def run_schedule_cancel(request: HttpRequest, run_id: int, message_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    try:
        schedule.cancel(run=run, pk=message_id)
    except schedule.ScheduleRefused as exc:
        return _section(request, run, status=409, schedule_error=str(exc))
    return _section(request, run)
