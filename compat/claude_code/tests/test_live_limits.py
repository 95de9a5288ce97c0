"""Live: usage limits, the status line and scheduled messages on the real Claude Code TUI, started
by lab's service as `make run` starts it, against the scripted model (compat §16).

The scripted model answers "LIMITED" with a 429 carrying the unified rate-limit headers. With an
API key (the only account the scripted model can stand in for) the CLI records no reset time and
its status line reports no account limits: the page must say so, never 0. The continue goes
through the scheduler (runs/schedule.py) at a short time set by the test, with lab's in-memory
state dropped in between as a restart would; the model must receive it exactly once.
"""

from __future__ import annotations

import datetime
import time
import uuid

import pytest
from django.utils import timezone

from compat.claude_code.scripted_model import text, usage_limit, when
from providers.schema import RunState
from providers.tmux import Tmux
from runs import schedule, services
from runs.models import ScheduledMessage
from runs.transcripts import _indexes, transcript_tail

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

CONTINUED = "Continuing after the limit."


@pytest.fixture
def live_settings(settings, claude_home, tmp_path):
    env = {k: v for k, v in claude_home.env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
    settings.LAB_AGENT_HOME = str(claude_home.home)
    settings.LAB_AGENT_ENV = env
    settings.LAB_TMUX_SOCKET = f"lablimits-{uuid.uuid4().hex[:10]}"
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    yield settings
    Tmux(settings.LAB_TMUX_SOCKET).kill_server()


def _wait(predicate, *, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _page(client, run) -> str:
    return client.get(f"/runs/{run.pk}/").content.decode()


def _continued(model) -> int:
    return sum(1 for r in model.turn_requests() if r.get("reply") == f"text:{CONTINUED}")


def _idle_with(run, line: str) -> bool:
    tail = transcript_tail(run, 50)
    return tail.state == RunState.IDLE and any(line in m.text for m in tail.messages)


def test_status_line_limit_and_a_scheduled_continue_sent_once(
    live_settings, claude_home, scripted_model, client
):
    from tests.factories import UserFactory

    client.force_login(UserFactory())
    # The continue rule first: after an error turn the CLI resends the failed prompt with the
    # next one in one message (compat §13).
    scripted_model.script.add(
        when("continue", text(CONTINUED)),
        when("LIMITED", usage_limit(resets_in_s=3600)),
        when("hello", text("Hello from the scripted model.")),
    )
    run = services.run_start(provider_id="claude-code", repository=claude_home.worktree, branch="lab/limits")
    status = run.provider.status_file(run.handle())  # type: ignore[attr-defined]
    _wait(status.exists, timeout=60, what="the first status line payload")
    page = _page(client, run)
    # An API key: no account limits, and no context figures before the first reply.
    assert "Context: not reported · This turn: not reported · Account quota: not reported" in page

    services.run_reply(run=run, text="hello world")
    _wait(lambda: _idle_with(run, "Hello from the scripted model."), timeout=90, what="the reply")
    _wait(lambda: "Context: 100 tokens" in _page(client, run), timeout=30, what="the context on the page")
    page = _page(client, run)
    assert (
        "Context: 100 tokens · 0% of 1,000,000 · This turn: 110 tokens · Account quota: not reported" in page
    )
    assert "Fake" not in page

    services.run_reply(run=run, text="LIMITED please")
    _wait(lambda: _idle_with(run, "API Error: Request rejected (429)"), timeout=90, what="the 429 turn")
    page = _page(client, run)
    assert "Rate limit reached (HTTP 429) · reset time not reported" in page
    assert "did not say when it resets" in page
    assert "Rate limit reached (HTTP 429) · reset time not reported" in client.get("/").content.decode()

    # The operator schedules "continue" a few seconds out, and one more they then cancel.
    soon = timezone.now() + datetime.timedelta(seconds=3)
    sent = schedule.schedule(run=run, text="continue", at=soon)
    dropped = schedule.schedule(run=run, text="continue", at=soon + datetime.timedelta(seconds=1))
    schedule.cancel(run=run, pk=dropped.pk)
    assert schedule.tick() == []  # not due yet
    _indexes.clear()  # lab restarts: nothing in memory survives, the stored rows do
    _wait(lambda: (sent.pk, ScheduledMessage.State.SENT) in schedule.tick(), timeout=60, what="the send")
    _wait(lambda: _idle_with(run, CONTINUED), timeout=90, what="the model's answer to the continue")
    _indexes.clear()  # and again after it: a second process finds nothing left to send
    for _ in range(3):
        assert schedule.tick() == []
    assert _continued(scripted_model) == 1
    dropped.refresh_from_db()
    assert dropped.state == ScheduledMessage.State.CANCELLED
