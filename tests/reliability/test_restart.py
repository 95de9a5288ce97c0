"""Case 11: lab is SIGKILLed while runs are live and started again (runs/management/commands/
serve.py reconciles before serving). Every run whose tmux session survived is reattached — its
state and live tail resume, with what was written while lab was down, no gap, no duplicate —
and every run whose session is gone is marked ended. A tmux session on lab's socket that no run
owns is left alone and reported, never adopted."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from providers.testing import fake_append
from providers.tmux import Tmux
from runs.management.commands.serve import reconcile_runs
from tests.reliability.support import PASSWORD, WS, Lab
from tests.security.support import seqs

SETUP = """
from django.contrib.auth import get_user_model
from runs import services
User = get_user_model()
op = User.objects.create_superuser("operator", "op@example.invalid", None)
op.set_password(sys.argv[2]); op.save()
runs = [services.run_start(provider_id="fake", repository=sys.argv[1], branch=f"lab/r{i}") for i in range(3)]
print(json.dumps([{"pk": r.pk, "session": r.tmux_session, "path": r.transcript_path} for r in runs]))
"""


def _ended(lab: Lab) -> dict[int, bool]:
    with sqlite3.connect(lab.root / "data" / "lab.sqlite3") as db:
        return {pk: ended is not None for pk, ended in db.execute("SELECT id, ended_at FROM runs_run")}


def _sessions(lab: Lab) -> set[str]:
    with sqlite3.connect(lab.root / "data" / "lab.sqlite3") as db:
        return {s for (s,) in db.execute("SELECT tmux_session FROM runs_run")}


def test_a_sigkilled_lab_restarts_reattaching_live_runs_and_ending_gone_ones(lab, git_repo):
    runs = lab.python(SETUP, str(git_repo), PASSWORD)
    tmux = Tmux(lab.socket_name)
    live, gone, idle = runs
    tmux.new_session("lab-foreign", cwd="/", argv=["/bin/cat"], env={"PATH": "/usr/bin:/bin"})
    fake_append(live["path"], kind="assistant_text", text="before the crash")

    lab.serve()
    cookie = lab.login()
    ws = WS(lab.port, f"/ws/runs/{live['pk']}/", cookie=cookie, origin=lab.origin)
    assert ws.status == 101
    ws.send_json({"type": "hello", "epoch": "", "seq": -1})
    frames = ws.until(lambda f: "before the crash" in f)
    epoch = re.search(r'data-epoch="(\w+)"', "".join(frames)).group(1)
    ws.close()

    lab.kill()  # SIGKILL: no shutdown hook, no cleanup
    tmux.kill_session(gone["session"])  # this run's agent dies while lab is down
    fake_append(live["path"], kind="assistant_text", text="written while lab was down")

    lab.serve()
    log = lab.log.read_text()
    assert "1 run(s) lost their tmux session" in log
    assert "lab-foreign" in log  # reported...
    assert tmux.has_session("lab-foreign")  # ...left alone
    assert "lab-foreign" not in _sessions(lab)  # ...never adopted
    assert _ended(lab) == {live["pk"]: False, gone["pk"]: True, idle["pk"]: False}

    # The live run's tail resumes from where the page was: the missed message once, then live.
    ws = WS(lab.port, f"/ws/runs/{live['pk']}/", cookie=cookie, origin=lab.origin)
    ws.send_json({"type": "hello", "epoch": epoch, "seq": 0})
    caught_up = ws.until(lambda f: "written while lab was down" in f)
    assert seqs(caught_up) == [1]
    fake_append(live["path"], kind="assistant_text", text="after the restart")
    frames = ws.until(lambda f: "after the restart" in f)
    assert seqs(frames) == [2]
    # The panel comes with the catch-up and again only when it changes.
    assert 'data-state="idle"' in "".join(caught_up + frames)
    ws.close()
    status, _h, body = lab.request("GET", f"/runs/{gone['pk']}/", cookie=cookie)
    assert status == 200 and 'data-state="ended"' in body
    status, _h, body = lab.request("GET", f"/runs/{idle['pk']}/", cookie=cookie)
    assert 'data-state="idle"' in body


@pytest.mark.django_db
def test_reconcile_ends_only_runs_without_a_session_and_adopts_nothing(fake_provider, git_repo, settings):
    from runs import services
    from runs.models import Run

    alive = services.run_start(provider_id="fake", repository=git_repo, branch="lab/a")
    dead = services.run_start(provider_id="fake", repository=git_repo, branch="lab/b")
    tmux = Tmux(settings.LAB_TMUX_SOCKET)
    tmux.kill_session(dead.tmux_session)
    tmux.new_session("lab-deadbeef", cwd="/", argv=["/bin/cat"], env={"PATH": "/usr/bin:/bin"})
    ended, foreign = reconcile_runs()
    assert ended == [dead.pk] and foreign == ["lab-deadbeef"]
    assert not Run.objects.get(pk=alive.pk).is_ended and Run.objects.get(pk=dead.pk).is_ended
    assert Run.objects.count() == 2 and tmux.has_session("lab-deadbeef")


@pytest.mark.django_db
def test_reconcile_with_no_tmux_server_ends_every_live_run(fake_provider, git_repo, settings):
    from runs import services
    from runs.models import Run

    runs = [services.run_start(provider_id="fake", repository=git_repo, branch=f"lab/n{i}") for i in range(2)]
    Tmux(settings.LAB_TMUX_SOCKET).kill_server()
    ended, foreign = reconcile_runs()
    assert sorted(ended) == sorted(r.pk for r in runs) and foreign == []
    assert all(r.is_ended for r in Run.objects.all())
    json.dumps(ended)
