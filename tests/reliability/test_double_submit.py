"""Case 15: 20 concurrent answers to one dialog through POST /runs/<id>/answer/ → exactly one
keystroke sequence reaches the provider; every other submit gets a clear 409. (runs/tests/
test_answer.py pins the service; this goes through the HTTP endpoint, threads released at once.)"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
from django.test import Client

from providers.testing import fake_raise_dialog
from runs import services

N = 20


@pytest.fixture
def run_with_dialog(fake_provider, git_repo, transactional_db):
    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/dbl")
    run.tool_use_id = f"toolu_{uuid.uuid4().hex[:12]}"
    fake_raise_dialog(
        run.transcript_path, {"tool_use_id": run.tool_use_id, "prompt": "Which?", "options": ["A", "B"]}
    )
    return run


def _slow_answers(fake_provider, monkeypatch, delay: float = 0.3) -> None:
    """Keys take a while to play, as the real recipes' pacing does: the window a double
    submit would slip into."""
    real = fake_provider.answer_dialog

    def slow(run, dialog, answers):
        time.sleep(delay)
        if not answers:  # a decline (the fake itself only plays answers)
            with fake_provider.lock:
                fake_provider.sent.append(("answer", (dialog.tool_use_id, ())))
            Path(run.transcript_path + ".dialog").unlink(missing_ok=True)
            return None
        return real(run, dialog, answers)

    monkeypatch.setattr(fake_provider, "answer_dialog", slow)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("variant", ["same answer", "different answers", "answers and declines"])
def test_twenty_concurrent_answers_send_exactly_one_sequence(
    run_with_dialog, operator, fake_provider, monkeypatch, variant
):
    _slow_answers(fake_provider, monkeypatch)
    run = run_with_dialog
    barrier = threading.Barrier(N)
    statuses: list[int] = [0] * N
    clients = []
    for _ in range(N):  # logged in up front: the race is about the answer, not session writes
        clients.append(Client())
        clients[-1].force_login(operator)

    def submit(i: int) -> None:
        client = clients[i]
        data = {"tool_use_id": run.tool_use_id, "count": "1", "answers-0": "0"}
        if variant == "different answers":
            data["answers-0"] = str(i % 2)
        elif variant == "answers and declines" and i % 2:
            data = {"tool_use_id": run.tool_use_id, "decline": "1"}
        barrier.wait()
        statuses[i] = client.post(f"/runs/{run.pk}/answer/", data).status_code

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    answers = [s for s in fake_provider.sent if s[0] == "answer"]
    assert len(answers) == 1, answers
    assert sorted(statuses) == [200] + [409] * (N - 1), statuses


@pytest.mark.django_db(transaction=True)
def test_a_resubmit_after_the_answer_landed_is_409_and_sends_nothing(
    authed_client, run_with_dialog, fake_provider
):
    run = run_with_dialog
    data = {"tool_use_id": run.tool_use_id, "count": "1", "answers-0": "1"}
    assert authed_client.post(f"/runs/{run_with_dialog.pk}/answer/", data).status_code == 200
    response = authed_client.post(f"/runs/{run_with_dialog.pk}/answer/", data)
    assert response.status_code == 409
    assert b"already" in response.content or b"no longer" in response.content
    assert len([s for s in fake_provider.sent if s[0] == "answer"]) == 1


@pytest.mark.django_db(transaction=True)
def test_an_answer_for_another_dialog_id_is_409_and_sends_nothing(
    authed_client, run_with_dialog, fake_provider
):
    data = {"tool_use_id": "toolu_other", "count": "1", "answers-0": "0"}
    assert authed_client.post(f"/runs/{run_with_dialog.pk}/answer/", data).status_code == 409
    assert fake_provider.sent == []
