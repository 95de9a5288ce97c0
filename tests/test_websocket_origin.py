"""Only the exact origin of lab's own pages may open a websocket (scheme, host and port)."""

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore

from lab.asgi import application


@pytest.fixture
def session_cookie(operator):
    store = SessionStore()
    store[SESSION_KEY] = str(operator.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = operator.get_session_auth_hash()
    store.save()
    return f"sessionid={store.session_key}".encode()


async def _connect(headers):
    communicator = WebsocketCommunicator(application, "/ws/lab/", headers=headers)
    connected, _ = await communicator.connect()
    await communicator.disconnect()
    return connected


@pytest.mark.django_db(transaction=True)
async def test_it_accepts_the_exact_origin_with_a_session(session_cookie):
    headers = [
        (b"origin", b"http://127.0.0.1:8000"),
        (b"host", b"127.0.0.1:8000"),
        (b"cookie", session_cookie),
    ]
    assert await _connect(headers)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "origin",
    [
        None,
        b"null",
        b"http://127.0.0.1:8001",  # another localhost port: AllowedHostsOriginValidator would pass it
        b"http://127.0.0.1",
        b"https://127.0.0.1:8000",
        b"http://127.0.0.1:8000.evil.com",
        b"http://evil.com",
        b"http://evil127.0.0.1:8000",
        b"http://127.0.0.1:80001",
        b"http://localhost:8001",
    ],
)
async def test_it_refuses_any_other_origin(session_cookie, origin):
    headers = [(b"host", b"127.0.0.1:8000"), (b"cookie", session_cookie)]
    if origin is not None:
        headers.append((b"origin", origin))
    assert not await _connect(headers)


@pytest.mark.django_db(transaction=True)
async def test_it_refuses_a_foreign_host_header(session_cookie):
    # DNS rebinding: the page's origin matches the attacker's name, so does the Host.
    headers = [
        (b"origin", b"http://127.0.0.1:8000"),
        (b"host", b"evil.com:8000"),
        (b"cookie", session_cookie),
    ]
    assert not await _connect(headers)
