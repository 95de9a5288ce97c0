"""A login waiting for its code: taken once, reaped on its TTL, a newer start or lab's exit,
its CLI's whole group killed and its throwaway folder removed."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from providers.errors import InvalidCode, LoginTimeout
from providers.pending import PendingLogin, PendingLogins


def a_login(tmp_path: Path) -> PendingLogin:
    workdir = tmp_path / "login"
    workdir.mkdir(parents=True)
    # A shell and its child in one new group: reaping must end both.
    proc = subprocess.Popen(["sh", "-c", "sleep 60 & wait"], start_new_session=True)
    return PendingLogin(proc=proc, workdir=workdir)


def group_alive(pgid: int, within_s: float = 5.0) -> bool:
    """Whether a process of the group still runs (a zombie does not) once `within_s` has passed
    for the kill to land."""
    deadline = time.monotonic() + within_s
    while True:
        out = subprocess.run(["ps", "-o", "stat=", "-g", str(pgid)], capture_output=True, text=True).stdout
        if not [stat for stat in out.split() if not stat.startswith("Z")]:
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)


def test_a_code_is_taken_once_and_the_finished_login_leaves_nothing(tmp_path):
    pending: PendingLogins[PendingLogin] = PendingLogins(lambda: 60)
    login = a_login(tmp_path)
    with pending.locked("p"):
        pending.wait_for_code("p", login)
    with pending.locked("p"):
        assert pending.claim("p") is login
    with pending.locked("p"), pytest.raises(InvalidCode):
        pending.claim("p")  # one code per login
    pending.finish("p", login)
    assert "p" not in pending.logins and not login.workdir.exists()
    assert not group_alive(login.proc.pid)


def test_a_login_nobody_finishes_is_reaped_after_its_ttl(tmp_path):
    pending: PendingLogins[PendingLogin] = PendingLogins(lambda: 0.2)
    login = a_login(tmp_path)
    with pending.locked("p"):
        pending.wait_for_code("p", login)
    deadline = time.monotonic() + 10
    while not login.reaped and time.monotonic() < deadline:
        time.sleep(0.05)
    assert login.reaped and not group_alive(login.proc.pid) and not login.workdir.exists()
    with pending.locked("p"), pytest.raises(LoginTimeout, match="waited more than"):
        pending.claim("p")


def test_a_newer_start_or_lab_exiting_discards_the_pending_one(tmp_path):
    pending: PendingLogins[PendingLogin] = PendingLogins(lambda: 60)
    first, second = a_login(tmp_path / "1"), a_login(tmp_path / "2")
    with pending.locked("p"):
        pending.wait_for_code("p", first)
        pending.discard("p")
        pending.wait_for_code("p", second)
    assert first.cancelled and first.reaped and not group_alive(first.proc.pid)
    pending.reap_all()
    assert second.reaped and not group_alive(second.proc.pid) and pending.logins == {}
