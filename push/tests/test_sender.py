"""What lab posts to a push service, checked by a local one that decrypts it with the
subscribing browser's keys (RFC 8291) and verifies its VAPID JWT (RFC 8292); which
subscriptions go (404, 410); and that the watcher never waits for a push."""

from __future__ import annotations

import os
import stat
import threading
import time

import pytest

from push import keys, sender
from push.models import Subscription
from push.payload import Push
from push.tests.push_service import LocalPushService

QUESTION = Push(run_id=7, name="feed-fruit", kind="question", text="Which fruit?", url="/runs/7/")


def _subscribe(user, info) -> Subscription:
    return Subscription.objects.create(
        user=user, endpoint=info["endpoint"], p256dh=info["keys"]["p256dh"], auth=info["keys"]["auth"]
    )


@pytest.mark.django_db
def test_a_push_arrives_encrypted_for_the_browser_signed_by_lab_with_a_ttl_and_a_topic(
    operator, push_on, push_service: LocalPushService, settings
):
    settings.LAB_PUSH_TTL = 600
    _subscribe(operator, push_service.subscribe("phone"))
    before = time.time()

    outcome = sender.deliver(QUESTION)

    assert outcome == sender.Outcome(sent=1)
    [got] = push_service.received
    assert got.error == ""
    # Only the browser's keys open it, and it says no more than the run, the kind, one line.
    assert got.payload == {
        "run": 7,
        "name": "feed-fruit",
        "kind": "question",
        "text": "Which fruit?",
        "url": "/runs/7/",
        "target": "/runs/7/#dialog",
        "tag": "lab-run-7-question",
    }
    assert got.headers["content-encoding"] == "aes128gcm"
    # Signed with lab's key (the one browsers subscribe with), for this push service, not forever.
    assert got.vapid_key == sender.public_key()
    assert got.claims["aud"] == push_service.origin
    assert before < got.claims["exp"] <= before + 24 * 3600
    assert got.claims["sub"] == settings.LAB_PUSH_CONTACT
    # A stale question is dropped by the service; an undelivered one with its topic is replaced.
    assert got.headers["ttl"] == "600"
    assert got.headers["topic"] == "lab-run-7-question"
    assert got.headers["urgency"] == "high"
    assert Subscription.objects.get().last_sent_at is not None


@pytest.mark.django_db
def test_a_finished_turn_opens_the_run_and_may_wait_for_the_device(operator, push_on, push_service):
    _subscribe(operator, push_service.subscribe("laptop"))
    sender.deliver(Push(run_id=3, name="docs", kind="finished", text="", url="/runs/3/"))
    [got] = push_service.received
    assert got.payload is not None
    assert (got.payload["target"], got.payload["tag"]) == ("/runs/3/", "lab-run-3-finished")
    assert got.headers["urgency"] == "normal"


@pytest.mark.django_db
def test_subscriptions_the_service_calls_gone_are_removed_and_a_failing_one_is_kept(
    operator, push_on, push_service
):
    gone = _subscribe(operator, push_service.subscribe("gone", answer=410))
    missing = _subscribe(operator, push_service.subscribe("missing", answer=404))
    flaky = _subscribe(operator, push_service.subscribe("flaky", answer=500))
    fine = _subscribe(operator, push_service.subscribe("fine", answer=201))

    outcome = sender.deliver(QUESTION)

    assert outcome == sender.Outcome(sent=1, removed=2, failed=1)
    assert set(Subscription.objects.values_list("pk", flat=True)) == {flaky.pk, fine.pk}
    assert gone.pk not in Subscription.objects.values_list("pk", flat=True)
    assert missing.pk not in Subscription.objects.values_list("pk", flat=True)
    kept = Subscription.objects.get(pk=flaky.pk)
    assert kept.last_error == "127.0.0.1 answered 500"
    assert len(push_service.received) == 4


@pytest.mark.django_db
def test_a_push_service_that_does_not_answer_is_noted_on_its_subscription(operator, push_on):
    dead = LocalPushService()
    info = dead.subscribe("dead")
    dead.close()  # nothing listens there any more
    _subscribe(operator, info)
    assert sender.deliver(QUESTION) == sender.Outcome(failed=1)
    assert Subscription.objects.get().last_error == "127.0.0.1 did not answer: ConnectionError"


@pytest.mark.django_db
def test_only_active_operators_get_pushes(operator, push_on, push_service):
    _subscribe(operator, push_service.subscribe("was-mine"))
    operator.is_active = False
    operator.save()
    assert sender.deliver(QUESTION) == sender.Outcome()
    assert push_service.received == []


def test_the_vapid_key_is_made_once_private_and_kept(tmp_path):
    path = tmp_path / "vapid_private.pem"
    first = keys.public_key(keys.load_or_create(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert keys.public_key(keys.load_or_create(path)) == first
    assert len(keys.public_key(keys.load_or_create(path))) == 87  # 65 bytes, base64url
    assert list(tmp_path.iterdir()) == [path]  # no temp file left


def test_a_full_queue_drops_the_push_instead_of_waiting():
    release = threading.Event()
    delivered: list[Push] = []

    def slow(push: Push) -> None:  # a push service that hangs
        release.wait(10)
        delivered.append(push)

    queue = sender.Sender(deliver=slow, maxsize=2)
    started = time.monotonic()
    taken = [queue.submit(Push(run_id=i, name=f"r{i}", kind="finished", text="", url="/")) for i in range(6)]
    elapsed = time.monotonic() - started

    assert elapsed < 0.5  # the watcher's call never waits for the push service
    # The sender holds one, the queue two; the rest are dropped and counted.
    assert taken.count(False) == queue.dropped >= 3
    release.set()
    queue.join()
    assert [p.run_id for p in delivered] == [i for i, ok in enumerate(taken) if ok]


def test_a_failing_delivery_does_not_stop_the_sender():
    seen: list[int] = []

    def flaky(push: Push) -> None:
        seen.append(push.run_id)
        if push.run_id == 1:
            raise RuntimeError("boom")

    queue = sender.Sender(deliver=flaky)
    for i in (1, 2):
        queue.submit(Push(run_id=i, name="r", kind="finished", text="", url="/"))
    queue.join()
    assert seen == [1, 2]


def test_nothing_is_queued_while_push_is_off(settings):
    settings.LAB_PUSH = False
    assert sender.submit(QUESTION) is False


@pytest.mark.django_db(transaction=True)
def test_a_slow_push_service_holds_up_the_sender_thread_and_never_the_caller(operator, push_on):
    slow = LocalPushService(delay=1.5)
    try:
        _subscribe(operator, slow.subscribe("slow"))
        queue = sender.Sender()
        started = time.monotonic()
        assert queue.submit(QUESTION) and queue.submit(QUESTION)
        assert time.monotonic() - started < 0.2
        queue.join()  # the thread posted both, one after the other
        assert time.monotonic() - started >= 3.0
        assert [r.payload["kind"] for r in slow.received if r.payload] == ["question", "question"]
    finally:
        slow.close()
