"""Case 2: only the exact origin of lab's own pages opens a websocket — on every websocket
route, with a valid session. Look-alikes of every kind are refused. (tests/test_websocket_origin.py
pins the basic list on /ws/lab/; this walks every route and the wider set.)"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from tests.security.support import session_cookie, ws_headers, ws_routes, ws_try

LOOK_ALIKES = [
    None,  # no Origin at all: curl from a worktree, a non-browser client
    "",
    "null",  # sandboxed iframes, file:// pages, some redirects
    "http://evil.example",
    "http://127.0.0.1:8001",  # another localhost port (another dev server, a malicious one)
    "http://localhost:8001",
    "http://127.0.0.1",  # port dropped
    "http://127.0.0.1:80",
    "http://127.0.0.1:80001",  # prefix of the port
    "http://127.0.0.1:800",  # prefix, shorter
    "https://127.0.0.1:8000",  # scheme
    "ws://127.0.0.1:8000",
    "file://",
    "chrome-extension://abcdefghijklmnop",
    "http://127.0.0.1:8000.evil.example",  # suffix
    "http://127.0.0.1.evil.example:8000",
    "http://evil127.0.0.1:8000",  # prefix
    "http://evil.example#http://127.0.0.1:8000",
    "http://127.0.0.1:8000/",  # trailing slash: not what a browser sends, not equal
    "http://127.0.0.1:8000/evil",
    "http://user@127.0.0.1:8000",
    "http://127.0.0.1:8000@evil.example",
    "HTTP://127.0.0.1:8000",  # browsers serialize lowercase; anything else is not a browser
    "http://0x7f.0.0.1:8000",
    "http://2130706433:8000",  # 127.0.0.1 as an integer
    "http://127.1:8000",
    "http://[::1]:8000",  # a loopback name lab does not serve under
    "http://0.0.0.0:8000",
    "http://127.0.0.1:8000 http://evil.example",
    " http://127.0.0.1:8000",
    "http://127.0.0.1:8000\x00",
]


@pytest.fixture
def cookie(operator, db):
    return session_cookie(operator)


@pytest.mark.django_db(transaction=True)
async def test_it_refuses_every_look_alike_origin_on_every_route(cookie):
    for origin in LOOK_ALIKES:
        for path in ws_routes():
            accepted, _ = await ws_try(path, ws_headers(cookie, origin=origin))
            assert not accepted, (path, origin)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("origin", ["http://127.0.0.1:8000", "http://localhost:8000"])
async def test_it_accepts_the_exact_bind_origin_and_its_localhost_alias(operator, origin):
    cookie = await sync_to_async(session_cookie)(operator)
    accepted, _ = await ws_try("/ws/lab/", ws_headers(cookie, origin=origin))
    assert accepted


@pytest.mark.django_db(transaction=True)
async def test_the_allowed_list_is_exact_strings_from_the_bind(settings, operator):
    # A configured https origin accepts itself and refuses its http twin.
    settings.LAB_ALLOWED_ORIGINS = ["https://lab.example.com"]
    settings.ALLOWED_HOSTS = ["lab.example.com"]
    cookie = await sync_to_async(session_cookie)(operator)
    host = "lab.example.com"
    assert (await ws_try("/ws/lab/", ws_headers(cookie, origin="https://lab.example.com", host=host)))[0]
    for origin in ("http://lab.example.com", "https://lab.example.com:443", "https://evil.lab.example.com"):
        assert not (await ws_try("/ws/lab/", ws_headers(cookie, origin=origin, host=host)))[0], origin
