"""The Terminal view end to end through lab's ASGI stack, on a real tmux pane (the FakeProvider's
`cat`): read-only until the keyboard is taken, keys exactly as typed once it is, the grant bound
to the login that took it, and the chat refusing to type while anyone holds it."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.sessions.models import Session
from django.test import Client

from providers.testing import fake_raise_dialog
from providers.tmux import Tmux
from runs import services
from runs.models import Run
from terminal import keyboard
from tests.factories import UserFactory
from tests.security.support import session_cookie, ws_headers, ws_open, ws_try

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run(fake_provider, git_repo):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/terminal")


def session_key(cookie: bytes) -> str:
    return cookie.decode().split("=", 1)[1]


def pane_text(run: Run) -> str:
    return Tmux(run.tmux_socket).capture(run.tmux_session)


async def frames(ws: WebsocketCommunicator, until, timeout: float = 10.0) -> list[object]:
    """Frames (JSON as dicts, output as bytes) until one satisfies `until`."""
    seen: list[object] = []
    async with asyncio.timeout(timeout):
        while True:
            message = await ws.receive_output(timeout=timeout)
            if message["type"] == "websocket.close":
                seen.append(("closed", message.get("code")))
                return seen
            frame = json.loads(message["text"]) if message.get("text") else message["bytes"]
            seen.append(frame)
            if until(frame):
                return seen


def is_type(kind: str):
    return lambda f: isinstance(f, dict) and f.get("type") == kind


async def open_terminal(run: Run, cookie: bytes) -> WebsocketCommunicator:
    ws = await ws_open(f"/ws/runs/{run.pk}/terminal/", cookie)
    got = await frames(ws, lambda f: isinstance(f, bytes))  # the keyboard, hello, the screen
    hello = next(f for f in got if is_type("hello")(f))
    assert (hello["cols"], hello["rows"]) == (200, 50)  # lab's size, whatever the viewer's
    return ws


async def test_read_only_until_the_keyboard_is_taken_then_keys_reach_the_pane(run) -> None:
    user = await sync_to_async(UserFactory)()
    cookie = await sync_to_async(session_cookie)(user)
    ws = await open_terminal(run, cookie)
    try:
        await ws.send_json_to({"type": "keys", "data": "read-only-typed\r"})
        refused = await frames(ws, is_type("refused"))
        assert "take the keyboard first" in refused[-1]["reason"]
        assert "read-only-typed" not in await sync_to_async(pane_text)(run)

        fresh = await Run.objects.select_related("keyboard_user").aget(pk=run.pk)
        await sync_to_async(keyboard.take)(fresh, user, session_key(cookie))
        mine = await frames(ws, is_type("keyboard"))
        assert mine[-1]["mine"] is True
        await ws.send_json_to({"type": "keys", "data": "taken-\u20ac\r"})
        echoed = await frames(ws, lambda f: isinstance(f, bytes) and "taken-€".encode() in f)
        assert echoed
        async with asyncio.timeout(10):
            while "taken-€" not in await sync_to_async(pane_text)(run):
                await asyncio.sleep(0.05)

        await sync_to_async(keyboard.give_back)(fresh)
        await frames(ws, lambda f: is_type("keyboard")(f) and f["mine"] is False)
        await ws.send_json_to({"type": "keys", "data": "after-giving-back\r"})
        await frames(ws, is_type("refused"))
        assert "after-giving-back" not in await sync_to_async(pane_text)(run)
    finally:
        await ws.disconnect()


async def test_another_login_of_the_same_user_cannot_type_with_the_grant(run) -> None:
    user = await sync_to_async(UserFactory)()
    holder, other = [await sync_to_async(session_cookie)(user) for _ in range(2)]
    fresh = await Run.objects.select_related("keyboard_user").aget(pk=run.pk)
    await sync_to_async(keyboard.take)(fresh, user, session_key(holder))
    ws = await open_terminal(run, other)
    try:
        await ws.send_json_to({"type": "keys", "data": "from-the-other-login\r"})
        await frames(ws, is_type("refused"))
        assert "from-the-other-login" not in await sync_to_async(pane_text)(run)
    finally:
        await ws.disconnect()


async def test_a_paste_cannot_leave_its_bracket(run) -> None:
    user = await sync_to_async(UserFactory)()
    cookie = await sync_to_async(session_cookie)(user)
    fresh = await Run.objects.select_related("keyboard_user").aget(pk=run.pk)
    await sync_to_async(keyboard.take)(fresh, user, session_key(cookie))
    ws = await open_terminal(run, cookie)
    try:
        await ws.send_json_to({"type": "paste", "text": "pasted\x1b[201~\x03escaped"})
        got = await frames(ws, lambda f: isinstance(f, bytes) and b"escaped" in f)
        out = b"".join(f for f in got if isinstance(f, bytes))
        assert b"pasted[201~escaped" in out  # the ESC and the Ctrl-C are gone
    finally:
        await ws.disconnect()


async def test_the_socket_is_refused_without_login_from_another_origin_and_for_an_ended_run(run) -> None:
    user = await sync_to_async(UserFactory)()
    cookie = await sync_to_async(session_cookie)(user)
    path = f"/ws/runs/{run.pk}/terminal/"
    assert await ws_try(path, ws_headers(None)) == (False, 4401)
    assert (await ws_try(path, ws_headers(cookie, origin="http://127.0.0.1:8001")))[0] is False
    assert await ws_try(f"/ws/runs/{run.pk + 1000}/terminal/", ws_headers(cookie)) == (False, 4404)
    await sync_to_async(services.run_end)(run=run)
    assert await ws_try(path, ws_headers(cookie)) == (False, 4410)


async def test_a_logout_closes_the_terminal_and_gives_the_keyboard_back(run) -> None:
    user = await sync_to_async(UserFactory)()
    cookie = await sync_to_async(session_cookie)(user)
    fresh = await Run.objects.select_related("keyboard_user").aget(pk=run.pk)
    await sync_to_async(keyboard.take)(fresh, user, session_key(cookie))
    ws = await open_terminal(run, cookie)

    def log_out() -> None:
        client = Client()
        client.cookies["sessionid"] = session_key(cookie)
        assert client.post("/logout/").status_code == 302

    await sync_to_async(log_out)()
    closed = await frames(ws, lambda f: isinstance(f, tuple))
    assert closed[-1] == ("closed", 4401)
    fresh = await Run.objects.select_related("keyboard_user").aget(pk=run.pk)
    assert fresh.keyboard_holder() == ""
    assert not await Session.objects.filter(session_key=session_key(cookie)).aexists()


def test_taking_the_keyboard_is_a_csrf_protected_post_and_says_who_holds_it(run, operator) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    url = f"/runs/{run.pk}/terminal/keyboard/"
    assert client.post(url, {"action": "take"}).status_code == 403  # no CSRF token
    page = client.get(f"/runs/{run.pk}/terminal/")
    assert "Take the keyboard" in page.content.decode()
    token = page.cookies["csrftoken"].value
    taken = client.post(url, {"action": "take"}, HTTP_X_CSRFTOKEN=token, HTTP_ORIGIN="http://testserver")
    assert "You are typing into" in taken.content.decode()
    run.refresh_from_db()
    assert run.keyboard_holder() == operator.username

    other = Client()
    other.force_login(UserFactory())
    refused = other.post(url, {"action": "take"})
    assert refused.status_code == 409
    assert f"{operator.username} holds the keyboard" in refused.content.decode()
    assert other.post(url, {"action": "take", "force": "1"}).status_code == 200
    run.refresh_from_db()
    assert run.keyboard_holder() != operator.username


def test_the_chat_sends_nothing_while_someone_holds_the_keyboard(
    run, operator, authed_client, fake_provider
) -> None:
    keyboard.take(run, operator, "some-session")
    response = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "hello"})
    assert response.status_code == 409  # refused, the draft kept in the composer
    assert f"{operator.username} holds the keyboard of" in response.content.decode()
    assert 'name="text"' in response.content.decode() and ">hello</textarea>" in response.content.decode()
    assert fake_provider.sent == []
    page = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert f"{operator.username} is typing into the terminal" in page
    keyboard.give_back(run)
    assert authed_client.post(f"/runs/{run.pk}/reply/", {"text": "hello"}).status_code in (200, 204)
    assert fake_provider.sent


def test_a_dialog_answer_and_an_interrupt_wait_for_the_keyboard_too(
    run, operator, authed_client, fake_provider
) -> None:
    fake_raise_dialog(
        run.transcript_path, {"tool_use_id": "toolu_kb", "prompt": "Which?", "options": ["A", "B"]}
    )
    keyboard.take(run, operator, "some-session")
    answered = authed_client.post(
        f"/runs/{run.pk}/answer/", {"tool_use_id": "toolu_kb", "count": "1", "answers-0": "1"}
    )
    assert answered.status_code == 409
    assert "holds the keyboard" in answered.content.decode()
    page = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'name="tool_use_id" value="toolu_kb"' in page  # the dialog is still offered
    interrupted = authed_client.post(f"/runs/{run.pk}/interrupt/")
    assert interrupted.status_code == 409 and "holds the keyboard" in interrupted.content.decode()
    assert fake_provider.sent == []
    keyboard.give_back(run)
    answered = authed_client.post(
        f"/runs/{run.pk}/answer/", {"tool_use_id": "toolu_kb", "count": "1", "answers-0": "1"}
    )
    assert answered.status_code == 200 and [s[0] for s in fake_provider.sent] == ["answer"]
