"""An open page's sockets end with its login: a logout closes them as logged out, a password
changed in another browser closes every socket of the old login, and a session that ended with
no message to its sockets stops them at their next frame."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.sessions.models import Session
from django.test import Client

from live import consumers
from providers.testing import fake_append
from runs import services
from tests.security.support import frames_until, session_cookie, ws_headers, ws_open, ws_try

OLD_PASSWORD = "correct horse battery staple"  # tests/factories.py
NEW_PASSWORD = "a brand new passphrase 42"


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/sockets")


async def _run_socket(run, cookie: bytes) -> WebsocketCommunicator:
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    await frames_until(ws, lambda f: '<div id="cursor"' in f)
    return ws


async def _feed_socket(cookie: bytes) -> WebsocketCommunicator:
    ws = await ws_open("/ws/lab/", cookie)
    await ws.send_json_to({"type": "feed"})
    await frames_until(ws, lambda f: f.startswith('{"feed"'))
    return ws


async def _closed_with(ws: WebsocketCommunicator, timeout: float = 5.0, *, never: str = "") -> int:
    """The close code of the socket's next close; no frame before it may hold `never`."""
    while True:
        out = await ws.receive_output(timeout=timeout)
        if out["type"] == "websocket.close":
            return int(out.get("code", 1000))
        assert not never or never not in out.get("text", ""), f"sent after the session ended: {out}"


def _client(cookie: bytes) -> Client:
    client = Client()
    client.cookies["sessionid"] = _key(cookie)
    return client


async def _sockets_of_two_browsers(run, operator):
    """Browser A (a run page and a page following the feed) and browser B (a run page), each
    with its own login of the same operator."""
    a, b = await sync_to_async(session_cookie)(operator), await sync_to_async(session_cookie)(operator)
    return a, b, await _run_socket(run, a), await _feed_socket(a), await _run_socket(run, b)


@pytest.mark.django_db(transaction=True)
async def test_a_logout_closes_that_sessions_run_and_feed_sockets_as_logged_out(run, operator):
    a, _b, run_ws, feed_ws, other_ws = await _sockets_of_two_browsers(run, operator)

    response = await sync_to_async(_client(a).post)("/logout/")
    assert response.status_code == 302

    # 4401: the page says "you are logged out" and does not reconnect (static/lab/connection.js).
    fake_append(run.transcript_path, kind="assistant_text", text="after the logout")
    assert await _closed_with(run_ws, never="after the logout") == consumers.CLOSE_UNAUTHENTICATED
    assert await _closed_with(feed_ws) == consumers.CLOSE_UNAUTHENTICATED
    # The other browser's login is not this one: its page keeps streaming.
    await frames_until(other_ws, lambda f: "after the logout" in f)
    await other_ws.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_password_changed_in_another_browser_closes_this_browsers_sockets(run, operator):
    a, b, run_ws, feed_ws, changer_ws = await _sockets_of_two_browsers(run, operator)

    # Browser B sets a new password on the account page; Django then holds A's login invalid.
    # The current password too, for a form that asks for it; one that does not ignores it.
    form = {"old_password": OLD_PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    response = await sync_to_async(_client(b).post)("/account/password/", form)
    assert response.status_code == 302, response.content

    for ws in (run_ws, feed_ws):
        # Closed for a reconnect, and the reconnect with A's cookie is refused as logged out.
        assert await _closed_with(ws) == consumers.CLOSE_SESSION_CHANGED
    assert await ws_try(f"/ws/runs/{run.pk}/", ws_headers(a)) == (False, consumers.CLOSE_UNAUTHENTICATED)
    assert await ws_try("/ws/lab/", ws_headers(a)) == (False, consumers.CLOSE_UNAUTHENTICATED)
    # B's own page was told to reconnect too (its login moved to a new session key): with the
    # cookie the password page gave it, the handshake is accepted.
    assert await _closed_with(changer_ws) == consumers.CLOSE_SESSION_CHANGED
    (new_key,) = {k async for k in Session.objects.values_list("session_key", flat=True)} - {
        _key(a),
        _key(b),
    }
    assert (await ws_try("/ws/lab/", ws_headers(f"sessionid={new_key}".encode())))[0]


def _key(cookie: bytes) -> str:
    return cookie.decode().split("=", 1)[1]


@pytest.mark.django_db(transaction=True)
async def test_a_session_that_ended_without_a_message_stops_the_socket_at_its_next_frame(
    run, operator, monkeypatch
):
    a = await sync_to_async(session_cookie)(operator)
    run_ws = await _run_socket(run, a)
    # The session row goes with no message to any socket (expiry, clearsessions, a lost message).
    await Session.objects.all().adelete()
    monkeypatch.setattr(consumers, "SESSION_RECHECK_S", 0.0)

    fake_append(run.transcript_path, kind="assistant_text", text="must not be shown")
    assert await _closed_with(run_ws, never="must not be shown") == consumers.CLOSE_SESSION_CHANGED


class _DownLayer:
    async def group_send(self, group: str, message: dict) -> None:
        raise ConnectionError("the channel layer is down")


def test_a_channel_layer_that_is_down_fails_neither_the_logout_nor_the_password_change(
    authed_client, monkeypatch
):
    from accounts import sockets

    monkeypatch.setattr(sockets, "get_channel_layer", lambda: _DownLayer())
    form = {"old_password": OLD_PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    assert authed_client.post("/account/password/", form).status_code == 302
    assert authed_client.post("/logout/").status_code == 302
    assert authed_client.get("/").status_code == 302  # logged out all the same
