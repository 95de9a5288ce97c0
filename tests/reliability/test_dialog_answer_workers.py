"""One answer per dialog across daphne workers (docs/architecture.md, "Dialog answering").

Two real workers (`manage.py serve` → daphne) share the suite's PostgreSQL database and run
the FakeProvider on one tmux server. Clicks on the same dialog arrive at both workers at the
same moment; exactly one answer reaches the agent and every other request is refused (409).
The claim is a database row: a per-process lock or in-memory set would let one answer through
on each worker. Marked live so the SQLite pass (one process by design) leaves it out.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.db import connection, transaction

from bench.common import make_operator_cookie
from providers.testing import FAKE_ANSWER_DELAY_ENV, FAKE_ROOT_ENV, fake_raise_dialog
from runs import services
from tests.reliability.support import Lab

pytestmark = [pytest.mark.live, pytest.mark.timeout(180)]

CLICKS_PER_WORKER = 4


class Worker(Lab):
    """A Lab on its own port whose environment points at the shared database and tmux server."""

    def __init__(self, root: Path, shared: dict[str, str]) -> None:
        super().__init__(root)
        root.mkdir(parents=True, exist_ok=True)
        self.shared = shared

    @property
    def env(self) -> dict[str, str]:
        return {**super().env, **self.shared}


def _database_url() -> str:
    db = connection.settings_dict  # the test database: rows the test commits are the workers' rows
    auth = f"{db['USER']}:{db['PASSWORD']}" if db.get("PASSWORD") else db["USER"]
    return f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def _csrf(worker: Worker, run_id: int, cookie: str) -> tuple[str, str]:
    """(cookie with csrftoken, token) as the run page hands them to the browser."""
    status, headers, body = worker.request("GET", f"/runs/{run_id}/", cookie=cookie)
    assert status == 200, body[:300]
    token = re.search(r'"x-csrftoken": "([^"]+)"', body).group(1)
    set_cookie = dict(h for h in headers if h[0].lower() == "set-cookie")
    csrf_cookie = re.search(r"csrftoken=([^;]+)", set_cookie.get("Set-Cookie", "")).group(1)
    return f"{cookie}; csrftoken={csrf_cookie}", token


def _require_postgres() -> None:
    if connection.vendor != "postgresql":
        why = "needs PostgreSQL (DATABASE_URL): two workers share one database"
        if os.environ.get("LAB_TEST_REQUIRE_POSTGRES") or os.environ.get("CI"):
            pytest.fail(f"{why}; this pass runs on {connection.vendor}")
        pytest.skip(why)


def _workers(tmp_path: Path, names: tuple[str, ...]) -> list[Worker]:
    shared = {
        "DATABASE_URL": _database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "LAB_DATA_DIR": str(settings.DATA_DIR),
        "LAB_TMUX_SOCKET": settings.LAB_TMUX_SOCKET,
        FAKE_ROOT_ENV: os.environ[FAKE_ROOT_ENV],
        FAKE_ANSWER_DELAY_ENV: "1.0",  # a real recipe takes seconds: the racing clicks overlap
    }
    return [Worker(tmp_path / name, shared) for name in names]


def _click(worker: Worker, cookies: str, token: str, run_id: int, tool_use_id: str, choice: int) -> int:
    form = urlencode({"tool_use_id": tool_use_id, "count": "1", "answers-0": str(choice)})
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-CSRFToken": token,
        "Origin": worker.origin,
        "HX-Request": "true",
    }
    status, _, _ = worker.request(
        "POST", f"/runs/{run_id}/answer/", body=form, cookie=cookies, headers=headers
    )
    return status


@pytest.mark.django_db(transaction=True)
def test_clicks_on_two_workers_play_exactly_one_answer(tmp_path, fake_provider, git_repo):
    _require_postgres()
    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/two-workers")
    fake_raise_dialog(
        run.transcript_path, {"tool_use_id": "toolu_w", "prompt": "Which?", "options": ["A", "B"]}
    )
    cookie = make_operator_cookie()
    workers = _workers(tmp_path, ("a", "b"))
    try:
        for w in workers:
            w.serve()
        prepared = [(w, *_csrf(w, run.pk, cookie)) for w in workers]
        start = threading.Barrier(len(workers) * CLICKS_PER_WORKER)
        statuses: list[int] = []
        guard = threading.Lock()

        def click(worker: Worker, cookies: str, token: str, choice: int) -> None:
            start.wait()
            status = _click(worker, cookies, token, run.pk, "toolu_w", choice)
            with guard:
                statuses.append(status)

        threads = [
            threading.Thread(target=click, args=(w, c, t, i % 2))
            for w, c, t in prepared
            for i in range(CLICKS_PER_WORKER)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        for w in workers:
            w.kill()
    played = Path(run.transcript_path).read_text().count("answered toolu_w")
    assert played == 1, f"{played} answers reached the agent; statuses {sorted(statuses)}"
    assert sorted(statuses) == [200] + [409] * (len(threads) - 1)


def _waiting_on_a_lock() -> int:
    """Backends waiting for a lock now (pg_locks is live; pg_stat_activity is a snapshot taken
    once per transaction, and the caller holds one)."""
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return cur.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_dialog_replaced_while_a_worker_waits_for_its_claim_gets_no_stale_answer(
    tmp_path, fake_provider, git_repo
):
    """A click reaches a worker whose claim waits on the database (another transaction holds
    the claims' table); meanwhile the agent replaces the dialog. The worker reads the dialog
    after its claim, so it finds the new one and plays nothing: read before the claim, the
    old answer would be typed into the new dialog."""
    _require_postgres()
    from runs.models import DialogAnswer

    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/claim-waits")
    fake_raise_dialog(
        run.transcript_path, {"tool_use_id": "toolu_w", "prompt": "Which?", "options": ["A", "B"]}
    )
    (worker,) = _workers(tmp_path, ("a",))
    statuses: list[int] = []
    try:
        worker.serve()
        cookies, token = _csrf(worker, run.pk, make_operator_cookie())
        click = threading.Thread(
            target=lambda: statuses.append(_click(worker, cookies, token, run.pk, "toolu_w", 0))
        )
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(f"LOCK TABLE {DialogAnswer._meta.db_table} IN EXCLUSIVE MODE")
            click.start()
            deadline = time.monotonic() + 30
            while not _waiting_on_a_lock():
                assert time.monotonic() < deadline, "the click never reached its claim"
                time.sleep(0.05)
            fake_raise_dialog(
                run.transcript_path,
                {"tool_use_id": "toolu_next", "prompt": "Which size?", "options": ["S", "L"]},
            )
        click.join(60)
    finally:
        worker.kill()
    assert statuses == [409]
    assert "answered toolu_w" not in Path(run.transcript_path).read_text()
    assert not DialogAnswer.objects.filter(run=run).exists()  # refused, nothing sent: no claim kept
