"""Case 3: DNS rebinding. A page on evil.example whose name now resolves to 127.0.0.1 sends
`Host: evil.example:8000`: every HTTP route answers 400 (DEBUG on and off, through the test
client and through lab's real ASGI application) and every websocket is refused."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator

from lab.asgi import application
from tests.security.support import (
    GATE_REFUSED,
    concrete,
    http_routes,
    session_cookie,
    ws_headers,
    ws_hello,
    ws_routes,
    ws_try,
)

FOREIGN_HOSTS = [
    "evil.example",
    "evil.example:8000",
    "127.0.0.1.evil.example:8000",
    "localhost.evil.example:8000",
    "evil.example:8000@127.0.0.1",
    "127.0.0.1:8000.evil.example",
    "0.0.0.0:8000",
    "[::1]:8000",
]


def _paths() -> list[str]:
    return sorted({concrete(route) for route, _name in http_routes()})


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
def test_every_route_answers_400_to_a_foreign_host(client, operator, settings, debug):
    settings.DEBUG = debug
    client.force_login(operator)  # even the operator's own browser, tricked into the attacker's name
    for path in _paths():
        for method in ("get", "post"):
            response = getattr(client, method)(path, HTTP_HOST="evil.example:8000")
            assert response.status_code == 400, (method, path, response.status_code)


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_every_look_alike_host_gets_400(client, operator, settings, debug, host):
    settings.DEBUG = debug
    client.force_login(operator)
    for path in ("/", "/login/", "/runs/1/", "/runs/1/reply/", "/providers/", "/admin/"):
        for method in ("get", "post"):
            response = getattr(client, method)(path, HTTP_HOST=host)
            assert response.status_code == 400, (method, path, host, response.status_code)


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
def test_the_bind_host_and_its_alias_are_served(client, operator, settings, debug):
    settings.DEBUG = debug
    client.force_login(operator)
    for host in ("127.0.0.1:8000", "localhost:8000"):
        assert client.get("/", HTTP_HOST=host).status_code == 200


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("debug", [False, True])
async def test_the_asgi_application_answers_400_to_a_foreign_host(operator, settings, debug):
    settings.DEBUG = debug
    cookie = await sync_to_async(session_cookie)(operator)
    for path in ("/", "/login/", "/runs/new/", "/providers/", "/admin/"):
        communicator = HttpCommunicator(
            application, "GET", path, headers=[(b"host", b"evil.example:8000"), (b"cookie", cookie)]
        )
        response = await communicator.get_response(timeout=10)
        assert response["status"] == 400, (path, response["status"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("debug", [False, True])
async def test_every_websocket_refuses_a_foreign_host(operator, run, settings, debug):
    # The rebinding page's Origin is its own name; the test also tries lab's origin to be sure
    # the Host check stands on its own. The run exists and the session is valid (the control
    # below), so only the gate can refuse.
    settings.DEBUG = debug
    cookie = await sync_to_async(session_cookie)(operator)
    for path in ws_routes(run.pk):
        await ws_hello(path, cookie)
    for host in [*FOREIGN_HOSTS, None, ""]:
        for path in ws_routes(run.pk):
            for origin in ("http://127.0.0.1:8000", f"http://{host}"):
                refused = await ws_try(path, ws_headers(cookie, origin=origin, host=host))
                assert refused == (False, GATE_REFUSED), (path, host, origin)
