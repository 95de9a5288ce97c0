"""auth_changed: the re-rendered card reaches every open lab page (provider.auth.changed)."""

import pytest
from channels.testing import WebsocketCommunicator

from auth_flows import services

pytestmark = pytest.mark.django_db


def test_it_pushes_the_card_as_an_oob_fragment(fake, lab_group):
    fake.logged_in = True
    services.auth_changed("fake")
    event = lab_group.receive()
    assert event["type"] == "lab.html"
    html = event["html"].strip()
    assert html.startswith('<article id="auth-card-fake"')
    assert 'hx-swap-oob="true"' in html
    assert 'data-event="provider.auth.changed"' in html
    assert 'data-provider="fake"' in html
    assert "operator@example.invalid" in html


def test_it_uses_the_status_it_is_given(fake, lab_group, monkeypatch):
    from providers.schema import AuthStatus

    monkeypatch.setattr(fake, "auth_status", lambda: pytest.fail("status was read again"))
    services.auth_changed("fake", status=AuthStatus(logged_in=False))
    assert "Not logged in" in lab_group.receive()["html"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_open_lab_page_receives_it(fake, settings):
    from asgiref.sync import sync_to_async
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from lab.asgi import application
    from tests.factories import UserFactory

    user = await sync_to_async(UserFactory)()
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    await sync_to_async(session.save)()
    origin = settings.LAB_ALLOWED_ORIGINS[0]
    headers = [
        (b"origin", origin.encode()),
        (b"host", origin.split("://", 1)[1].encode()),
        (b"cookie", f"{settings.SESSION_COOKIE_NAME}={session.session_key}".encode()),
    ]
    communicator = WebsocketCommunicator(application, "/ws/lab/", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    try:
        await sync_to_async(services.auth_changed)("fake")
        frame = await communicator.receive_from(timeout=5)
        assert 'id="auth-card-fake"' in frame and 'data-event="provider.auth.changed"' in frame
    finally:
        await communicator.disconnect()
