"""Messages lab sends later: "continue" once a usage limit resets (opt-in per run), or any
message the operator schedules ("send at 02:00").

Stored in the database (ScheduledMessage), so a restart of lab neither loses nor repeats one.
Each due message is claimed with one conditional UPDATE (pending -> sending): with several lab
processes exactly one sends it, and a process that dies after the claim leaves it `sending`,
which the next start reports as "may have been sent" rather than sending it again. Sending goes
through `services.run_reply`, with its refusals. The loop that sends them runs in lab's serve
process (`start`), beside the watchers.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time

from django.conf import settings
from django.db import close_old_connections, transaction
from django.utils import timezone

from hosts import identity
from providers.base import UsageReporter
from providers.errors import PromptPending, ProviderError, ReplyNotDelivered, StillStarting
from providers.schema import RunState, Usage
from runs import services
from runs.limits import Limit, current_limit, limit_in_force
from runs.models import Run, ScheduledMessage
from runs.runview import run_view

log = logging.getLogger("lab.schedule")
S = ScheduledMessage.State
# While the run works or asks, a due message waits this long before lab looks again.
RECHECK = datetime.timedelta(seconds=20)
# A message claimed this long ago and still `sending`: its process died while sending it.
STALE_SENDING = datetime.timedelta(minutes=5)


class ScheduleRefused(ValueError):
    """The operator's schedule was not stored; the message says why (nothing was lost: the
    draft stays on the page)."""


def continue_text() -> str:
    return str(settings.LAB_CONTINUE_TEXT)


def continue_margin() -> datetime.timedelta:
    return datetime.timedelta(seconds=float(settings.LAB_CONTINUE_MARGIN_S))


def run_usage(run: Run) -> Usage | None:
    provider = run.provider
    if run.is_ended or not isinstance(provider, UsageReporter):
        return None
    try:
        return provider.usage(run.handle())
    except (OSError, ValueError):
        return None


def schedule(
    *,
    run: Run,
    text: str,
    at: datetime.datetime,
    kind: str = ScheduledMessage.Kind.MESSAGE,
    limit_id: str = "",
) -> ScheduledMessage:
    text = text.strip()
    if run.is_ended:
        raise ScheduleRefused("This run has ended: nothing can be sent to it.")
    if not text:
        raise ScheduleRefused("Write the message to send.")
    if len(text.encode()) > settings.LAB_REPLY_MAX_BYTES:
        raise ScheduleRefused(f"The message is longer than {settings.LAB_REPLY_MAX_BYTES} bytes.")
    if at <= timezone.now():
        raise ScheduleRefused("That time has passed: choose a time in the future.")
    return ScheduledMessage.objects.create(run=run, kind=kind, text=text, send_at=at, limit_id=limit_id)


def cancel(*, run: Run, pk: int) -> ScheduledMessage:
    """Cancel a message that has not been claimed yet. One conditional UPDATE: a message being
    sent right now is not cancelled, and the operator is told so."""
    done = ScheduledMessage.objects.filter(pk=pk, run=run, state=S.PENDING).update(
        state=S.CANCELLED, done_at=timezone.now(), note="Cancelled."
    )
    message = ScheduledMessage.objects.get(pk=pk, run=run)
    if not done:
        raise ScheduleRefused(f"Not cancelled: it is already {message.get_state_display().lower()}.")
    return message


def arm_continue(run: Run, limit: Limit, now: datetime.datetime | None = None) -> ScheduledMessage | None:
    """The one "continue" for this limit, at its reset plus the margin, when the run opted in
    and the CLI said when it resets. None when nothing was (or needed to be) scheduled."""
    now = now or timezone.now()
    if not run.continue_on_limit or run.is_ended or limit.resets_at is None:
        return None
    at = limit.resets_at + continue_margin()
    if at <= now:
        at = now  # the reset has passed already (lab was down): continue at once, still once
    with transaction.atomic():
        existing = ScheduledMessage.objects.filter(run=run, limit_id=limit.native_id).first()
        if existing is not None:
            return existing if existing.state == S.PENDING else None
        return ScheduledMessage.objects.create(
            run=run,
            kind=ScheduledMessage.Kind.CONTINUE,
            text=continue_text(),
            send_at=at,
            limit_id=limit.native_id,
        )


def set_continue(*, run: Run, on: bool) -> ScheduledMessage | None:
    """The operator's toggle: on arms the continue for the limit the run stopped on (if it
    did), off cancels every continue still pending."""
    Run.objects.filter(pk=run.pk).update(continue_on_limit=on)
    run.continue_on_limit = on
    if not on:
        ScheduledMessage.objects.filter(run=run, kind=ScheduledMessage.Kind.CONTINUE, state=S.PENDING).update(
            state=S.CANCELLED, done_at=timezone.now(), note="Cancelled: continue at reset turned off."
        )
        return None
    limit = current_limit(run_view(run, limit=1).tail.messages)
    return arm_continue(run, limit) if limit is not None else None


def _claim(message: ScheduledMessage, now: datetime.datetime) -> bool:
    # The one claim: whichever process's UPDATE matches the pending row sends it.
    return bool(
        ScheduledMessage.objects.filter(pk=message.pk, state=S.PENDING, send_at__lte=now).update(
            state=S.SENDING
        )
    )


def _finish(message: ScheduledMessage, state: str, note: str = "", **fields: object) -> None:
    ScheduledMessage.objects.filter(pk=message.pk).update(state=state, note=note[:500], **fields)


def _later(message: ScheduledMessage, at: datetime.datetime, note: str) -> None:
    ScheduledMessage.objects.filter(pk=message.pk, state=S.SENDING).update(
        state=S.PENDING, send_at=at, note=note[:500]
    )


def send_one(message: ScheduledMessage, now: datetime.datetime) -> str:
    """Claim one due message and send it, or put it back for later, or say why not. Returns
    the state it ends in ("" when another process had claimed it)."""
    if not _claim(message, now):
        return ""
    run = Run.objects.get(pk=message.run_id)
    if run.is_ended:
        _finish(message, S.FAILED, "Not sent: the run has ended.", done_at=now)
        return S.FAILED
    view = run_view(run, limit=1)
    if message.kind == ScheduledMessage.Kind.CONTINUE:
        limit = current_limit(view.tail.messages)
        if limit is None or limit.native_id != message.limit_id:
            _finish(message, S.CANCELLED, "Not sent: the run moved on after the limit.", done_at=now)
            return S.CANCELLED
    held = limit_in_force(run_usage(run), now)
    if held is not None:
        at = held + continue_margin()
        _later(message, at, f"The limit was still in force: waits for its next reset ({at:%H:%M} UTC).")
        return S.PENDING
    if view.state != RunState.IDLE or view.dialog is not None or view.tail.queued:
        _later(message, now + RECHECK, f"Waiting: the run was {view.state.value}, not idle.")
        return S.PENDING
    try:
        services.run_reply(run=run, text=message.text)
    except (PromptPending, StillStarting) as exc:
        _later(message, now + RECHECK, f"Waiting: {exc}")
        return S.PENDING
    except ReplyNotDelivered as exc:
        # It may still land: never send a second copy on lab's own initiative.
        _finish(message, S.FAILED, f"Sent, not confirmed (not sent again): {exc}", done_at=now)
        return S.FAILED
    except ProviderError as exc:
        _finish(message, S.FAILED, f"Not sent: {exc}", done_at=now)
        return S.FAILED
    _finish(message, S.SENT, "", done_at=timezone.now())
    log.info("run %s: sent scheduled message %s (%s)", run.pk, message.pk, message.kind)
    return S.SENT


def arm_opted_in(now: datetime.datetime) -> None:
    """Runs that opted in and stopped on a limit get their continue, whether or not a page is
    open to see the limit."""
    for run in Run.objects.live().filter(continue_on_limit=True, host=identity.host_name()):
        try:
            limit = current_limit(run_view(run, limit=1).tail.messages)
        except (OSError, ValueError, ProviderError):
            continue
        if limit is not None:
            arm_continue(run, limit, now)


def reap_stale(now: datetime.datetime) -> int:
    """A message left `sending` by a process that stopped mid-send: said, never resent."""
    stale = ScheduledMessage.objects.filter(state=S.SENDING, send_at__lte=now - STALE_SENDING)
    return stale.filter(run__host=identity.host_name()).update(
        state=S.FAILED,
        done_at=now,
        note="lab stopped while sending it: it may or may not have reached the agent.",
    )


def tick(now: datetime.datetime | None = None) -> list[tuple[int, str]]:
    """One pass: arm the opted-in runs' continues, then send what is due. Returns (id, state)
    for each message acted on."""
    now = now or timezone.now()
    arm_opted_in(now)
    reap_stale(now)
    done = []
    # Only this host's runs: another host's agent is reached by its own runner's loop.
    due = ScheduledMessage.objects.filter(state=S.PENDING, send_at__lte=now, run__host=identity.host_name())
    for message in due:
        try:
            state = send_one(message, now)
        except Exception:
            log.exception("scheduled message %s", message.pk)
            _finish(message, S.FAILED, "Not sent: lab failed while sending it (see its log).", done_at=now)
            state = S.FAILED
        if state:
            done.append((message.pk, state))
    return done


_started = threading.Lock()
_thread: threading.Thread | None = None


def start(poll_s: float | None = None) -> threading.Thread:
    """The loop, once per process: a tick every `poll_s` seconds (LAB_SCHEDULE_POLL_S)."""
    global _thread
    poll = poll_s if poll_s is not None else float(settings.LAB_SCHEDULE_POLL_S)
    with _started:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, args=(poll,), name="lab-schedule", daemon=True)
            _thread.start()
        return _thread


def _loop(poll: float) -> None:
    while True:
        try:
            tick()
        except Exception:
            log.exception("schedule tick")
        finally:
            close_old_connections()  # a thread outside Django's request cycle closes its own
        time.sleep(poll)


def listed(run: Run) -> list[ScheduledMessage]:
    """What the run page lists: every pending message, then the last few done."""
    pending = list(run.scheduled.filter(state__in=(S.PENDING, S.SENDING)))
    done = list(run.scheduled.exclude(state__in=(S.PENDING, S.SENDING)).order_by("-done_at", "-pk")[:5])
    return pending + done
