"""What the run page and the runs list say about limits, context and quota, and the scheduled
messages' forms, against the FakeProvider (the real CLIs: compat/claude_code/tests/
test_live_limits.py and tests/browser/test_limits_browser.py)."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from providers.testing import fake_append, fake_report_usage
from runs import services
from runs.models import Run, ScheduledMessage


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/limits-page")


def limit(run, resets_at: int) -> None:
    fake_append(
        run.transcript_path, kind="lifecycle", text="API Error: 429", limit="usage", resets_at=resets_at
    )


def at(hours: float) -> datetime.datetime:
    return timezone.now() + datetime.timedelta(hours=hours)


def test_a_limit_shows_its_reset_time_and_the_continue_toggle(authed_client, run):
    reset = at(2).replace(second=0, microsecond=0)
    limit(run, int(reset.timestamp()))
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert f"Usage limit reached · resets at {reset:%H:%M} UTC" in body
    assert "Continue when it resets" in body


def test_a_limit_without_a_reset_says_so_and_offers_no_toggle(authed_client, run):
    fake_append(run.transcript_path, kind="lifecycle", text="API Error: 429", limit="rate", resets_at=0)
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert "Rate limit reached (HTTP 429) · reset time not reported" in body
    assert "Continue when it resets" not in body and "did not say when it resets" in body


def test_the_toggle_schedules_one_continue_and_off_cancels_it(authed_client, run):
    limit(run, int(at(1).timestamp()))
    r = authed_client.post(f"/runs/{run.pk}/continue/", {"on": "1"})
    assert r.status_code == 200 and "lab sends “continue” once the limit resets" in r.content.decode()
    (armed,) = ScheduledMessage.objects.filter(run=run)
    assert armed.kind == "continue" and armed.state == "pending"
    authed_client.post(f"/runs/{run.pk}/continue/", {"on": "0"})
    armed.refresh_from_db()
    assert armed.state == "cancelled" and not Run.objects.get(pk=run.pk).continue_on_limit


def test_context_and_quota_say_not_reported_until_the_cli_reports(authed_client, run):
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert "Context: not reported · This turn: not reported · Account quota: not reported" in body
    fake_report_usage(
        run.transcript_path,
        context_tokens=52_000,
        context_window=200_000,
        context_percent=26,
        turn_tokens=1_500,
    )
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert (
        "Context: 52,000 tokens · 26% of 200,000 · This turn: 1,500 tokens · Account quota: not reported"
        in body
    )


def test_the_runs_list_shows_context_per_run_and_the_quota_once(authed_client, run, git_repo):
    other = services.run_start(provider_id="fake", repository=git_repo, branch="lab/limits-other")
    reset = int(at(3).timestamp())
    fake_report_usage(
        run.transcript_path,
        context_tokens=10_000,
        context_window=100_000,
        context_percent=10,
        quotas=[("5-hour", 80, reset)],
        at_ns=2,
    )
    fake_report_usage(other.transcript_path, context_tokens=5_000, quotas=[("5-hour", 70, reset)], at_ns=1)
    body = authed_client.get("/").content.decode()
    assert "10,000 tokens · 10% of 100,000" in body and "5,000 tokens" in body
    assert body.count("account quota:") == 1
    assert "Fake Agent account quota: 5-hour 80% used, resets at" in body  # the latest report


def test_the_runs_list_says_a_run_stopped_on_a_limit(authed_client, run):
    limit(run, 0)
    assert "Usage limit reached · reset time not reported" in authed_client.get("/").content.decode()


def test_scheduling_a_message_lists_it_and_cancel_cancels_it(authed_client, run):
    when = timezone.localtime(at(5)).strftime("%Y-%m-%dT%H:%M")
    r = authed_client.post(f"/runs/{run.pk}/schedule/", {"text": "good morning", "at": when})
    assert r.status_code == 200
    (message,) = ScheduledMessage.objects.filter(run=run)
    assert "good morning" in r.content.decode() and "pending" in r.content.decode()
    r = authed_client.post(f"/runs/{run.pk}/schedule/{message.pk}/cancel/")
    assert r.status_code == 200 and "cancelled" in r.content.decode()
    r = authed_client.post(f"/runs/{run.pk}/schedule/{message.pk}/cancel/")
    assert r.status_code == 409 and "Not cancelled: it is already cancelled." in r.content.decode()


@pytest.mark.parametrize(
    ("when", "error"),
    [("", "Choose the date and time"), ("2001-01-01T00:00", "That time has passed")],
)
def test_a_bad_schedule_is_refused_and_keeps_the_draft(authed_client, run, when, error):
    r = authed_client.post(f"/runs/{run.pk}/schedule/", {"text": "my long draft", "at": when})
    assert r.status_code == 422
    body = r.content.decode()
    assert error in body and "my long draft" in body
    assert r.headers.get("HX-Reswap") == "outerHTML"
    assert not ScheduledMessage.objects.exists()


def test_the_new_run_form_default_opts_the_run_in(authed_client, fake_provider, git_repo):
    fake_provider.logged_in = True
    r = authed_client.post(
        "/runs/new/",
        {"provider": "fake", "repository": str(git_repo), "branch": "lab/opted", "continue_on_limit": "on"},
    )
    assert r.status_code == 302
    assert Run.objects.get(branch="lab/opted").continue_on_limit
