from __future__ import annotations

from collections.abc import Iterator

import pytest

from push import sender
from push.tests.push_service import LocalPushService


@pytest.fixture
def push_on(settings, tmp_path) -> Iterator[None]:
    """Push on, with a VAPID key of the test's own and the local push service's http endpoints."""
    settings.LAB_PUSH = True
    settings.LAB_PUSH_HTTP_ENDPOINTS = True
    settings.LAB_PUSH_KEY_FILE = tmp_path / "vapid_private.pem"
    sender._key_cache.clear()
    yield
    sender._key_cache.clear()


@pytest.fixture
def push_service() -> Iterator[LocalPushService]:
    service = LocalPushService()
    try:
        yield service
    finally:
        service.close()
