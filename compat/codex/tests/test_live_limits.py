"""Live: a plan's usage limit on Codex 0.171.0 started by lab's service as `make run` starts it,
against the scripted model (COMPAT-adapter §16). The scripted model answers FX-LIMIT with a 429
`usage_limit_reached` and the `x-codex-primary-*` headers, the reset a few seconds away; the run
opted in to continue at the reset. The page shows the reset time and the account's window from
the rollout, the scheduler sends "continue" once after the reset (lab's memory dropped in
between, as a restart would), and the model receives it exactly once.
"""

from __future__ import annotations

import time
import uuid

import pytest
from django.utils import timezone

from compat.codex.adapter_harness import CodexAdapterRig
from compat.codex.scripted_model import text, usage_limit, when
from providers.schema import RunState
from providers.tmux import Tmux
from runs import schedule, services
from runs.limits import reset_text
from runs.models import ScheduledMessage
from runs.transcripts import _indexes, transcript_tail

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

RESET_S = 8
CONTINUED = "Continuing after the limit."


@pytest.fixture
def rig(tmp_path, settings):
    r = CodexAdapterRig(tmp_path, settings)
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    settings.LAB_TMUX_SOCKET = f"lablimits-{uuid.uuid4().hex[:8]}"
    settings.LAB_CONTINUE_MARGIN_S = 2
    r.sockets.append(settings.LAB_TMUX_SOCKET)
    yield r
    r.close()


def _wait(predicate, *, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


def _idle_with(run, line: str) -> bool:
    tail = transcript_tail(run, 50)
    return tail.state == RunState.IDLE and any(line in m.text for m in tail.messages)


def test_a_usage_limit_shows_its_reset_and_continue_is_sent_once_after_it(rig, client):
    from tests.factories import UserFactory

    client.force_login(UserFactory())
    rig.model.script.add(
        when("continue", text(CONTINUED)),
        when("FX-LIMIT", usage_limit(resets_in_s=RESET_S)),
    )
    run = services.run_start(provider_id="codex", repository=rig.worktree, branch="lab/limit")
    schedule.set_continue(run=run, on=True)
    run.refresh_from_db()
    tmux = Tmux(run.tmux_socket)
    _wait(lambda: "? for shortcuts" in tmux.capture(run.tmux_session), timeout=60, what="the composer")

    services.run_reply(run=run, text="please FX-LIMIT")
    _wait(lambda: _idle_with(run, "usage limit"), timeout=90, what="the failed turn")
    (line,) = [m for m in transcript_tail(run, 50).messages if m.limit]
    assert line.limit == "usage" and line.resets_at > 0
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert f"Usage limit reached · {reset_text(line.resets_at)}" in page
    assert "5-hour 100% used" in page  # the account's window, from the rollout's token_count
    assert "lab sends “continue” once the limit resets" in page

    def armed_continue():
        schedule.tick()  # the loop's pass: it arms the opted-in run's continue
        return ScheduledMessage.objects.filter(run=run).first()

    armed = _wait(armed_continue, timeout=20, what="the continue armed")
    assert armed.kind == "continue" and armed.send_at.timestamp() >= line.resets_at
    assert schedule.tick() == []  # before the reset: nothing
    _indexes.clear()  # lab restarts before the reset
    _wait(lambda: (armed.pk, ScheduledMessage.State.SENT) in schedule.tick(), timeout=60, what="the send")
    assert timezone.now().timestamp() >= line.resets_at
    _wait(lambda: _idle_with(run, CONTINUED), timeout=90, what="the answer to the continue")
    _indexes.clear()
    for _ in range(3):
        assert schedule.tick() == []
    sent = [
        r for r in rig.model.requests if r.get("kind") == "turn" and r.get("reply") == f"text:{CONTINUED}"
    ]
    assert len(sent) == 1
    # The switch-model picker never opened: the continue reached the prompt as a prompt.
    assert "Switch to" not in tmux.capture(run.tmux_session)
