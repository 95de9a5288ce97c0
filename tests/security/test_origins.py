"""Case 2: only the exact origin of lab's own pages opens a websocket — on every websocket
route, with a valid session and a run that exists (on a missing run the consumer refuses
anyway). Look-alikes of every kind are refused by the origin gate itself (its close code),
while the same session from the exact origin is accepted."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from tests.security.support import GATE_REFUSED, session_cookie, ws_headers, ws_hello, ws_routes, ws_try

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
async def test_it_refuses_every_look_alike_origin_on_every_route(cookie, run):
    for path in ws_routes(run.pk):
        await ws_hello(path, cookie)  # the control: the exact origin is accepted here
        for origin in LOOK_ALIKES:
            accepted, code = await ws_try(path, ws_headers(cookie, origin=origin))
            assert (accepted, code) == (False, GATE_REFUSED), (path, origin)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("origin", ["http://127.0.0.1:8000", "http://localhost:8000"])
async def test_it_accepts_the_exact_bind_origin_and_its_localhost_alias(operator, run, origin):
    cookie = await sync_to_async(session_cookie)(operator)
    for path in ws_routes(run.pk):
        accepted, _ = await ws_try(path, ws_headers(cookie, origin=origin))
        assert accepted, path


@pytest.mark.django_db(transaction=True)
async def test_the_allowed_list_is_exact_strings_from_the_bind(settings, operator, run):
    # A configured https origin accepts itself and refuses its http twin.
    settings.LAB_ALLOWED_ORIGINS = ["https://lab.example.com"]
    settings.ALLOWED_HOSTS = ["lab.example.com"]
    cookie = await sync_to_async(session_cookie)(operator)
    host = "lab.example.com"
    for path in ws_routes(run.pk):
        assert (await ws_try(path, ws_headers(cookie, origin="https://lab.example.com", host=host)))[0]
        for origin in (
            "http://lab.example.com",
            "https://lab.example.com:443",
            "https://evil.lab.example.com",
        ):
            refused = await ws_try(path, ws_headers(cookie, origin=origin, host=host))
            assert refused == (False, GATE_REFUSED), (path, origin)


@pytest.mark.django_db(transaction=True)
async def test_it_refuses_a_foreign_host_header_even_from_the_exact_origin(cookie, run):
    # DNS rebinding: the page's origin matches the attacker's name, so does the Host
    # (test_dns_rebinding.py walks the look-alike hosts).
    for path in ws_routes(run.pk):
        refused = await ws_try(path, ws_headers(cookie, host="evil.example:8000"))
        assert refused == (False, GATE_REFUSED), path
