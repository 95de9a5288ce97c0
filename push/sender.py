"""Sending pushes off the watcher's hot path: the feed hands a `Push` to `submit`, which only
puts it on a bounded queue; one daemon thread per process encrypts and posts it to every
subscription (pywebpush: RFC 8291 aes128gcm, a VAPID JWT per RFC 8292). A slow or failing push
service holds up that thread only; when the queue is full the newest push is dropped and logged,
never waited for. A subscription the push service answers 404 or 410 is gone for good
(RFC 8030 7.3) and is removed."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import requests
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone
from pywebpush import WebPushException, webpush

from push import keys
from push.models import Subscription
from push.payload import Push

log = logging.getLogger(__name__)

QUEUE_MAX = 64
POST_TIMEOUT_S = 10.0
GONE = (404, 410)


@dataclass(frozen=True)
class Outcome:
    sent: int = 0
    removed: int = 0
    failed: int = 0


_key_lock = threading.Lock()
_key_cache: dict[Path, object] = {}


def vapid_key() -> object:
    """The process's VAPID key pair, generated into the data dir on first use."""
    path = Path(settings.LAB_PUSH_KEY_FILE)
    with _key_lock:
        if path not in _key_cache:
            _key_cache[path] = keys.load_or_create(path)
        return _key_cache[path]


def public_key() -> str:
    return keys.public_key(vapid_key())


def deliver(push: Push) -> Outcome:
    """Posts `push` to every active operator's subscriptions (lab has no per-user runs)."""
    key = vapid_key()
    sent = removed = failed = 0
    for sub in Subscription.objects.filter(user__is_active=True):
        try:
            webpush(
                sub.info(),
                data=push.body(),
                vapid_private_key=key,
                # A fresh dict per call: pywebpush writes the first endpoint's aud into it.
                vapid_claims={"sub": settings.LAB_PUSH_CONTACT},
                ttl=settings.LAB_PUSH_TTL,
                headers=push.headers(),
                timeout=POST_TIMEOUT_S,
            )
        except WebPushException as exc:
            status = exc.response.status_code if exc.response is not None else None
            if status in GONE:
                sub.delete()
                removed += 1
                log.info(
                    "push: removed %s's subscription on %s (the push service answered %s)",
                    sub.user,
                    sub.service,
                    status,
                )
                continue
            failed += 1
            _failed(sub, f"{sub.service} answered {status}" if status else str(exc).splitlines()[0][:200])
            continue
        except requests.RequestException as exc:
            failed += 1
            _failed(sub, f"{sub.service} did not answer: {type(exc).__name__}")
            continue
        sent += 1
        Subscription.objects.filter(pk=sub.pk).update(last_sent_at=timezone.now(), last_error="")
    return Outcome(sent=sent, removed=removed, failed=failed)


def _failed(sub: Subscription, why: str) -> None:
    log.warning("push to %s's browser failed: %s", sub.user, why)
    Subscription.objects.filter(pk=sub.pk).update(last_error=why[:300])


class Sender:
    """A bounded queue and the one thread that drains it (started on the first push)."""

    def __init__(self, deliver: Callable[[Push], object] = deliver, maxsize: int = QUEUE_MAX) -> None:
        self._deliver = deliver
        self._queue: queue.Queue[Push] = queue.Queue(maxsize=maxsize)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.dropped = 0

    def submit(self, push: Push) -> bool:
        """Queues `push` without ever waiting; False (and a log line) when the queue is full."""
        self._start()
        try:
            self._queue.put_nowait(push)
        except queue.Full:
            self.dropped += 1
            log.warning(
                "push: queue full (%d waiting), dropped %s for %s", self._queue.qsize(), push.kind, push.name
            )
            return False
        return True

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lab-push", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            push = self._queue.get()
            try:
                close_old_connections()
                self._deliver(push)
            except Exception:  # one bad push must not stop the sender
                log.exception("push: sending %s for %s failed", push.kind, push.name)
            finally:
                close_old_connections()
                self._queue.task_done()

    def join(self) -> None:
        """Waits until every queued push was handled (tests)."""
        self._queue.join()


_sender = Sender()


def submit(push: Push) -> bool:
    """The feed's one call: queue a push when push is on; never blocks."""
    if not settings.LAB_PUSH:
        return False
    return _sender.submit(push)
