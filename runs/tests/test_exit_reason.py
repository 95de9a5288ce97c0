"""A run whose agent exits (at start or later) says why: the pane's last lines and the exit
status, kept by tmux's remain-on-exit and shown on the run page."""

import os
import re
import stat
import subprocess
import time

import pytest

from providers.testing import returns_within
from providers.tmux import Tmux
from runs import services


def _wait(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


@pytest.fixture
def dying_run(fake_provider, git_repo, db):
    """A run whose program prints a reason and exits 1, as a CLI that cannot start does."""
    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/dies")
    tmux = Tmux(run.tmux_socket)
    script = "sleep 0.2; printf 'Starting…\\n\\n Unable to connect to the service\\n'; exit 1"
    # The same pane, a new program (lab's server and its remain-on-exit stay as they were).
    respawn = ["respawn-pane", "-k", "-t", f"={run.tmux_session}:", "/bin/sh", "-c", script]
    subprocess.run(["tmux", "-L", run.tmux_socket, "-f", "/dev/null", *respawn], check=True)
    run.tmux_pane_pid = tmux.pane_pid(run.tmux_session)
    run.save(update_fields=["tmux_pane_pid"])
    _wait(lambda: tmux.pane_exit(run.tmux_session))
    return run


def test_tmux_keeps_a_dead_pane_with_its_status_and_last_lines(dying_run):
    tmux = Tmux(dying_run.tmux_socket)
    # The status, when tmux has reaped the process (tmux 3.3a here sometimes leaves it a zombie:
    # then the status is unknown, and lab says so rather than guess).
    assert tmux.pane_exit(dying_run.tmux_session) in (
        (dying_run.tmux_pane_pid, 1),
        (dying_run.tmux_pane_pid, None),
    )
    output = tmux.final_output(dying_run.tmux_session)
    assert output.splitlines() == ["Starting…", " Unable to connect to the service"]


def test_a_dead_pane_is_not_a_live_run_and_its_reason_is_kept(dying_run):
    assert services.run_alive(dying_run) is False
    services.run_mark_ended(run=dying_run)
    assert dying_run.is_ended
    recorded = services.run_exit(dying_run)
    assert recorded is not None and recorded.status in (1, None)
    assert "Unable to connect to the service" in recorded.output
    # Read, the session has nothing more to show: lab closes it.
    assert not Tmux(dying_run.tmux_socket).has_session(dying_run.tmux_session)


def test_the_run_page_shows_why_the_agent_exited(authed_client, dying_run):
    body = authed_client.get(f"/runs/{dying_run.pk}/").content.decode()
    # The page found the dead pane itself (nobody marked the run ended before).
    assert 'class="badge state-ended"' in body
    shown = r'class="exit-reason".*exited( with status 1)?\. What its terminal showed last'
    assert re.search(shown, body, re.S)
    assert "Unable to connect to the service" in body


def test_a_run_the_operator_ended_shows_no_exit_reason(authed_client, fake_provider, git_repo, db):
    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/ended")
    services.run_end(run=run)
    assert services.run_exit(run) is None
    assert "exit-reason" not in authed_client.get(f"/runs/{run.pk}/").content.decode()


def test_a_fifo_where_the_exit_is_recorded_is_no_exit_and_no_hang(authed_client, fake_provider, git_repo, db):
    # The run's folder holds the spool, whose path the agent sees: it can plant anything there.
    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/fifo-exit")
    services.exit_file(run).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(services.exit_file(run))
    assert returns_within(lambda: services.run_exit(run)) is None


def test_the_exit_record_is_0600_whatever_the_umask(dying_run):
    old = os.umask(0)
    try:
        services.run_mark_ended(run=dying_run)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(services.exit_file(dying_run)).st_mode) == 0o600
