"""Every page lab serves through Django carries Cache-Control: no-store (a transcript, a diff
or a settings page must not stay in a cache), and static files carry nosniff like the pages.
Driven through lab's real ASGI stack, static handler included."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator

from lab.asgi import application
from tests.security.support import HOST, session_cookie


async def _get(path: str, cookie: bytes = b"") -> tuple[int, dict[bytes, bytes]]:
    headers = [(b"host", HOST.encode())] + ([(b"cookie", cookie)] if cookie else [])
    communicator = HttpCommunicator(application, "GET", path, headers=headers)
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(10)
    # A streamed file ends with a body message without "body" (the ASGI default, b""), which
    # HttpCommunicator.get_response does not accept: read to the end here.
    while (await communicator.receive_output(10)).get("more_body"):
        pass
    return start["status"], {k.lower(): v for k, v in start["headers"]}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/", "/runs/new/", "/providers/", "/account/password/", "/no-such-page/"])
async def test_every_authenticated_response_is_no_store(path, operator):
    cookie = await sync_to_async(session_cookie)(operator)
    status, headers = await _get(path, cookie)
    assert status in (200, 404), status
    assert b"no-store" in headers[b"cache-control"]


@pytest.mark.django_db(transaction=True)
async def test_the_login_page_and_its_redirect_are_no_store_too():
    for path in ("/login/", "/"):
        _, headers = await _get(path)
        assert b"no-store" in headers[b"cache-control"], path


@pytest.mark.django_db(transaction=True)
async def test_static_files_carry_nosniff_and_may_be_cached():
    status, headers = await _get("/static/lab/lab.css")
    assert status == 200
    assert headers[b"x-content-type-options"] == b"nosniff"
    assert b"no-store" not in headers.get(b"cache-control", b"")
    status, headers = await _get("/static/lab/no-such-file.css")
    assert status == 404 and headers[b"x-content-type-options"] == b"nosniff"
