"""A run stopped on a usage limit: which line says so, when it resets, and the words the
pages, the runs list and the notifications use for it. No database."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.utils import timezone

from providers.schema import Message, Usage


@dataclass(frozen=True)
class Limit:
    """The turn the run stopped on: a limit line, the last thing its transcript says."""

    native_id: str
    kind: str  # "usage" | "rate" (Message.limit)
    resets_at: datetime.datetime | None  # None: the CLI did not say


def current_limit(messages: list[Message]) -> Limit | None:
    """The limit the run stopped on, when the last line of its transcript is one (anything
    after it, a prompt typed by hand say, means the run has moved on)."""
    if not messages or not messages[-1].limit:
        return None
    last = messages[-1]
    at = datetime.datetime.fromtimestamp(last.resets_at, datetime.UTC) if last.resets_at else None
    return Limit(native_id=last.native_id or f"seq-{last.seq}", kind=last.limit, resets_at=at)


def limit_in_force(usage: Usage | None, now: datetime.datetime) -> datetime.datetime | None:
    """When the account limit the CLI last reported as full resets, if it still holds now."""
    if usage is None or not usage.quotas:
        return None
    ends = [
        datetime.datetime.fromtimestamp(q.resets_at, datetime.UTC)
        for q in usage.quotas
        if q.used_percent >= 100 and q.resets_at
    ]
    later = [end for end in ends if end > now]
    return max(later) if later else None


def reset_text(at: datetime.datetime | int | None) -> str:
    """ "resets at 14:05 UTC" in lab's time zone (with the date when it is not today), or what
    lab does not know."""
    if isinstance(at, int):
        at = datetime.datetime.fromtimestamp(at, datetime.UTC) if at else None
    if at is None:
        return "reset time not reported"
    local = timezone.localtime(at)
    day = "" if local.date() == timezone.localdate() else local.strftime(" on %b %d")
    return f"resets at {local:%H:%M} {local.tzname()}{day}"


def limit_text(limit: Limit) -> str:
    """The one line every place that shows the limit says."""
    what = "Usage limit reached" if limit.kind == "usage" else "Rate limit reached (HTTP 429)"
    return f"{what} · {reset_text(limit.resets_at)}"


@dataclass(frozen=True)
class UsageSummary:
    """What the page says of a run's context and its account's quota, each "not reported" when
    the CLI said nothing (never a 0 standing in for it)."""

    context: str
    turn: str
    quota: str


NOT_REPORTED = "not reported"


def context_text(usage: Usage | None) -> str:
    if usage is None or usage.context_tokens is None:
        return NOT_REPORTED
    text = f"{usage.context_tokens:,} tokens"
    if usage.context_percent is not None and usage.context_window:
        text += f" · {usage.context_percent:g}% of {usage.context_window:,}"
    elif usage.context_window:
        text += f" of {usage.context_window:,}"
    return text


def quota_text(usage: Usage | None) -> str:
    if usage is None or not usage.quotas:
        return NOT_REPORTED
    return "; ".join(f"{q.name} {q.used_percent:g}% used, {reset_text(q.resets_at)}" for q in usage.quotas)


def usage_summary(usage: Usage | None) -> UsageSummary:
    turn = NOT_REPORTED if usage is None or usage.turn_tokens is None else f"{usage.turn_tokens:,} tokens"
    return UsageSummary(context=context_text(usage), turn=turn, quota=quota_text(usage))
