"""runs.schedule: a scheduled message or a continue at a limit's reset is sent once, only to an
idle run, through run_reply's refusals; against the FakeProvider (the real CLIs:
compat/claude_code/tests/test_live_limits.py)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from django.utils import timezone

from providers.testing import fake_append, fake_raise_dialog, fake_report_usage
from runs import schedule, services
from runs.models import ScheduledMessage

S = ScheduledMessage.State


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/sched-1")


def replies(fake_provider):
    return [text for verb, text in fake_provider.sent if verb == "reply"]


def soon(seconds: float = 0) -> datetime.datetime:
    return timezone.now() + datetime.timedelta(seconds=seconds)


def hit_limit(run, resets_in: float | None = 120, native: str = "") -> None:
    resets_at = int(soon(resets_in).timestamp()) if resets_in is not None else 0
    fake_append(
        run.transcript_path,
        kind="lifecycle",
        text="API Error: 429",
        limit="usage",
        resets_at=resets_at,
        state="idle",
    )


def test_a_scheduled_message_is_sent_once_at_its_time(run, fake_provider):
    message = schedule.schedule(run=run, text="good morning", at=soon(60))
    assert schedule.tick(soon(30)) == []  # not due yet
    assert schedule.tick(soon(61)) == [(message.pk, S.SENT)]
    assert schedule.tick(soon(120)) == []  # a second pass finds nothing to send
    assert replies(fake_provider) == ["good morning"]
    message.refresh_from_db()
    assert message.state == S.SENT and message.done_at is not None


def test_a_cancelled_message_sends_nothing(run, fake_provider):
    message = schedule.schedule(run=run, text="later", at=soon(60))
    schedule.cancel(run=run, pk=message.pk)
    assert schedule.tick(soon(120)) == []
    assert replies(fake_provider) == []
    with pytest.raises(schedule.ScheduleRefused, match="already cancelled"):
        schedule.cancel(run=run, pk=message.pk)


def test_a_sent_message_cannot_be_cancelled(run, fake_provider):
    message = schedule.schedule(run=run, text="now-ish", at=soon(1))
    schedule.tick(soon(2))
    with pytest.raises(schedule.ScheduleRefused, match="already sent"):
        schedule.cancel(run=run, pk=message.pk)


@pytest.mark.parametrize(
    ("text", "at", "error"),
    [("  ", 60, "Write the message"), ("hi", -60, "That time has passed")],
)
def test_bad_schedules_are_refused_and_store_nothing(run, text, at, error):
    with pytest.raises(schedule.ScheduleRefused, match=error):
        schedule.schedule(run=run, text=text, at=soon(at))
    assert not ScheduledMessage.objects.exists()


def test_it_waits_while_the_run_works_and_sends_once_idle(run, fake_provider):
    fake_append(run.transcript_path, kind="user_text", text="working on it")  # a turn in progress
    message = schedule.schedule(run=run, text="after that", at=soon(1))
    assert schedule.tick(soon(2)) == [(message.pk, S.PENDING)]
    message.refresh_from_db()
    assert message.state == S.PENDING and "not idle" in message.note
    assert replies(fake_provider) == []
    fake_append(run.transcript_path, kind="assistant_text", text="done", state="idle")
    assert schedule.tick(soon(60)) == [(message.pk, S.SENT)]
    assert replies(fake_provider) == ["after that"]


def test_it_waits_while_a_question_is_pending(run, fake_provider):
    fake_raise_dialog(run.transcript_path, {"tool_use_id": "t1", "prompt": "Which?", "options": ["A", "B"]})
    message = schedule.schedule(run=run, text="go on", at=soon(1))
    schedule.tick(soon(2))
    message.refresh_from_db()
    assert message.state == S.PENDING and replies(fake_provider) == []


def test_an_opted_in_run_continues_once_after_the_reset(run, fake_provider, settings):
    settings.LAB_CONTINUE_MARGIN_S = 30
    services_run = type(run).objects.get(pk=run.pk)
    schedule.set_continue(run=services_run, on=True)
    hit_limit(run, resets_in=120)
    assert schedule.tick(soon(60)) == []  # armed, not due: the reset is 120 s away plus 30 s
    (armed,) = ScheduledMessage.objects.all()
    assert armed.kind == "continue" and armed.text == "continue"
    assert abs((armed.send_at - soon(150)).total_seconds()) < 5
    assert schedule.tick(soon(140)) == []
    assert schedule.tick(soon(155)) == [(armed.pk, S.SENT)]
    # The fake records the continue as a prompt: the limit is no longer the last line, and
    # later passes arm nothing more.
    assert schedule.tick(soon(400)) == []
    assert replies(fake_provider) == ["continue"]
    assert ScheduledMessage.objects.count() == 1


def test_a_run_that_did_not_opt_in_never_continues(run, fake_provider):
    hit_limit(run, resets_in=1)
    assert schedule.tick(soon(3600)) == []
    assert replies(fake_provider) == [] and not ScheduledMessage.objects.exists()


def test_a_limit_with_no_reset_time_schedules_nothing(run, fake_provider):
    schedule.set_continue(run=run, on=True)
    hit_limit(run, resets_in=None)
    assert schedule.tick(soon(3600)) == []
    assert not ScheduledMessage.objects.exists()


def test_turning_continue_off_cancels_the_pending_one(run, fake_provider):
    hit_limit(run, resets_in=60)
    armed = schedule.set_continue(run=run, on=True)
    assert armed is not None and armed.state == S.PENDING
    schedule.set_continue(run=run, on=False)
    assert schedule.tick(soon(3600)) == []
    armed.refresh_from_db()
    assert armed.state == S.CANCELLED and replies(fake_provider) == []


def test_a_continue_is_dropped_when_the_run_moved_on(run, fake_provider):
    hit_limit(run, resets_in=60)
    armed = schedule.set_continue(run=run, on=True)
    assert armed is not None
    fake_append(run.transcript_path, kind="user_text", text="typed continue by hand")
    fake_append(run.transcript_path, kind="assistant_text", text="ok", state="idle")
    assert schedule.tick(soon(3600)) == [(armed.pk, S.CANCELLED)]
    assert replies(fake_provider) == []
    armed.refresh_from_db()
    assert "moved on" in armed.note


def test_a_limit_still_in_force_waits_for_its_next_reset(run, fake_provider, settings):
    settings.LAB_CONTINUE_MARGIN_S = 10
    hit_limit(run, resets_in=60)
    armed = schedule.set_continue(run=run, on=True)
    assert armed is not None
    later = int(soon(7200).timestamp())
    fake_report_usage(run.transcript_path, quotas=[("5-hour", 100.0, later)])
    assert schedule.tick(soon(120)) == [(armed.pk, S.PENDING)]
    armed.refresh_from_db()
    assert armed.send_at == datetime.datetime.fromtimestamp(later, datetime.UTC) + datetime.timedelta(
        seconds=10
    )
    assert "still in force" in armed.note and replies(fake_provider) == []
    assert schedule.tick(soon(7300)) == [(armed.pk, S.SENT)]
    assert replies(fake_provider) == ["continue"]


def test_a_message_left_sending_by_a_stopped_lab_is_never_sent_again(run, fake_provider):
    message = schedule.schedule(run=run, text="once", at=soon(1))
    # Another process claimed it and stopped before it finished.
    ScheduledMessage.objects.filter(pk=message.pk).update(state=S.SENDING)
    schedule.tick(soon(2))
    assert replies(fake_provider) == []
    schedule.tick(soon(3600))
    message.refresh_from_db()
    assert message.state == S.FAILED and "may or may not" in message.note
    assert replies(fake_provider) == []


def test_an_ended_run_gets_nothing_and_says_so(run, fake_provider):
    message = schedule.schedule(run=run, text="hello?", at=soon(1))
    services.run_end(run=run)
    schedule.tick(soon(2))
    message.refresh_from_db()
    assert message.state == S.FAILED and "ended" in message.note
    assert replies(fake_provider) == []


def test_a_restart_between_arming_and_the_reset_neither_loses_nor_doubles_it(run, fake_provider):
    """A restart is a new process: nothing in memory survives; the stored row does."""
    schedule.set_continue(run=run, on=True)
    hit_limit(run, resets_in=60)
    schedule.tick(soon(1))
    from runs.transcripts import _indexes

    _indexes.clear()  # what a new process would not have
    schedule.tick(soon(3600))
    schedule.tick(soon(3700))
    assert replies(fake_provider) == ["continue"]


def test_the_reply_path_refusals_hold(run, fake_provider):
    Path(run.transcript_path + ".blocked").touch()
    message = schedule.schedule(run=run, text="go", at=soon(1))
    schedule.tick(soon(2))
    message.refresh_from_db()
    assert message.state == S.PENDING and replies(fake_provider) == []


@pytest.mark.django_db(transaction=True)
def test_workers_racing_on_one_due_message_send_it_once(fake_provider, git_repo):
    """Every worker saw the message pending (its tick's query) and tries to send it at the same
    moment: the conditional UPDATE lets exactly one through. On PostgreSQL (make test's first
    pass) the claims really run at once; on SQLite they queue on its write lock."""
    import threading

    from django.db import connection

    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/sched-race")
    message = schedule.schedule(run=run, text="exactly once", at=soon(1))
    start = threading.Barrier(8)
    states: list[str] = []

    def worker() -> None:
        try:
            start.wait()
            states.append(schedule.send_one(message, soon(2)))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(states) == [""] * 7 + [S.SENT]
    assert replies(fake_provider) == ["exactly once"]
