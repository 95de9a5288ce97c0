"""Case 12: the tmux server is killed mid-run. The page shows the run ended, a reply or an
interrupt is refused with 409 and nothing is sent — and after tmux comes back, a new session
that happens to have the run's name is not the run's: lab must not trust names across a tmux
server restart."""

from __future__ import annotations

import os
import signal
import time

import pytest
from asgiref.sync import sync_to_async

from providers.tmux import Tmux
from runs import services
from runs.management.commands.serve import reconcile_runs
from runs.models import Run
from tests.security.support import frames_until, session_cookie, ws_open

IMPOSTOR_DEFECT = (
    "lab trusts a tmux session name across a tmux server restart: with no watcher running (no page "
    "open), a same-named session started after the restart receives the run's reply — fix (needs a "
    "migration): record the pane pid and the server's #{start_time} on Run at runs/services.run_start "
    "(Tmux.new_session already returns the pane pid), and make services._require_live/run_alive (and "
    "serve.reconcile_runs) compare Tmux.pane_pid(session) and display-message '#{start_time}' with them: "
    "a mismatch marks the run ended and raises SessionGone"
)


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/loss")


def _impostor(run: Run, tmp_path) -> None:
    """A new tmux server on lab's socket with a session of the run's name (another pane)."""
    out = tmp_path / "impostor.txt"
    Tmux(run.tmux_socket).new_session(
        run.tmux_session,
        cwd=str(tmp_path),
        argv=["/bin/sh", "-c", f"cat > {out}"],
        env={"PATH": "/usr/bin:/bin"},
    )


@pytest.mark.django_db(transaction=True)
async def test_a_killed_tmux_server_shows_ended_and_refuses_replies(run, operator, fake_provider, tmp_path):
    cookie = await sync_to_async(session_cookie)(operator)
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    Tmux(run.tmux_socket).kill_server()
    await frames_until(ws, lambda f: 'data-state="ended"' in f)
    await ws.disconnect()
    assert (await Run.objects.aget(pk=run.pk)).is_ended
    # tmux is back, with a session of the same name: still nothing of the run's goes there.
    await sync_to_async(_impostor)(run, tmp_path)

    def post():
        from django.test import Client

        client = Client()
        client.force_login(operator)
        return (
            client.post(f"/runs/{run.pk}/reply/", {"text": "meant for the dead run"}).status_code,
            client.post(f"/runs/{run.pk}/interrupt/").status_code,
        )

    assert await sync_to_async(post)() == (409, 409)
    assert fake_provider.sent == []


@pytest.mark.django_db(transaction=True)  # the reply's service runs in a thread of its own
def test_a_reply_to_a_run_whose_tmux_died_unwatched_is_refused(authed_client, run, fake_provider):
    Tmux(run.tmux_socket).kill_server()
    assert authed_client.post(f"/runs/{run.pk}/reply/", {"text": "anyone?"}).status_code == 409
    assert fake_provider.sent == []


@pytest.mark.django_db(transaction=True)  # the reply's service runs in a thread of its own
def test_a_same_named_session_after_a_tmux_restart_never_gets_the_runs_reply(
    authed_client, run, fake_provider, tmp_path
):
    Tmux(run.tmux_socket).kill_server()
    time.sleep(0.1)
    _impostor(run, tmp_path)
    response = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "meant for the run"})
    assert fake_provider.sent == []
    assert response.status_code == 409


@pytest.mark.django_db
def test_a_restart_does_not_reattach_a_same_named_session_from_a_new_tmux_server(run, tmp_path):
    Tmux(run.tmux_socket).kill_server()
    _impostor(run, tmp_path)
    ended, _foreign = reconcile_runs()
    assert ended == [run.pk]


@pytest.mark.django_db
@pytest.mark.parametrize("ended_first", [True, False], ids=["ended run", "run lab still thinks live"])
def test_end_never_kills_a_session_that_has_since_taken_the_runs_name(
    authed_client, run, tmp_path, ended_first
):
    """End applies run_alive's identity (the pane pid recorded at spawn), not the name."""
    Tmux(run.tmux_socket).kill_server()
    if ended_first:
        services.run_mark_ended(run=run)
    _impostor(run, tmp_path)
    response = authed_client.post(f"/runs/{run.pk}/end/")
    assert response.status_code == 302
    assert Tmux(run.tmux_socket).has_session(run.tmux_session), "End killed a session that is not the run's"
    assert Run.objects.get(pk=run.pk).is_ended


@pytest.mark.django_db
def test_end_kills_the_runs_own_session(authed_client, run):
    assert authed_client.post(f"/runs/{run.pk}/end/").status_code == 302
    assert not Tmux(run.tmux_socket).has_session(run.tmux_session)
    assert Run.objects.get(pk=run.pk).is_ended


def test_a_stopped_tmux_server_is_a_503_that_says_so(authed_client, run, monkeypatch):
    from providers import tmux as tmux_mod

    server = int(Tmux(run.tmux_socket)._run("display-message", "-p", "#{pid}").stdout)
    monkeypatch.setattr(tmux_mod, "TIMEOUT", 0.5)  # the bound, shortened: the behaviour at it is the same
    os.kill(server, signal.SIGSTOP)
    try:
        response = authed_client.get(f"/runs/{run.pk}/")
    finally:
        os.kill(server, signal.SIGCONT)
    assert response.status_code == 503
    body = response.content.decode()
    assert "<h1>lab's tmux server does not answer</h1>" in body and "no reply within 0.5 s" in body
    assert "Traceback" not in body
