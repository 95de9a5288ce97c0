"""Login is required on every page, endpoint and websocket — also from 127.0.0.1 and with no
Origin (an agent in a worktree can curl lab)."""

import pytest
from channels.testing import WebsocketCommunicator
from django.urls import URLPattern, URLResolver, get_resolver

from lab.asgi import application

PUBLIC = {"login", "accounts:login_link", "admin:login"}


def _patterns(resolver=None, prefix="", ns=""):
    resolver = resolver or get_resolver()
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            sub_ns = f"{ns}{p.namespace}:" if p.namespace else ns
            yield from _patterns(p, prefix + str(p.pattern), sub_ns)
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), f"{ns}{p.name}" if p.name else ""


def _concrete(route: str) -> str:
    out = route.replace("^", "").replace("$", "").replace("\\Z", "")
    for token in ("<int:run_id>", "<int:pk>", "<path:object_id>", "<str:token>", "<str:provider_id>"):
        out = out.replace(token, "1")
    import re

    out = re.sub(r"<[^>]+>", "x", out)
    out = re.sub(r"\(\?P<[^>]+>[^)]*\)", "x", out)
    return "/" + out.lstrip("/")


ROUTES = sorted({(_concrete(r), n) for r, n in _patterns() if n not in PUBLIC})


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "name"), ROUTES)
@pytest.mark.parametrize("method", ["get", "post"])
def test_it_refuses_anonymous_requests(client, path, name, method):
    response = getattr(client, method)(path, REMOTE_ADDR="127.0.0.1")
    assert response.status_code in (302, 403, 404, 405), (path, response.status_code)
    if response.status_code == 302:
        assert "/login/" in response["Location"]
    assert response.status_code != 200


def test_the_route_walk_covers_the_app():
    paths = {p for p, _ in ROUTES}
    assert "/" in paths
    assert any(p.startswith("/admin/") for p in paths)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/ws/lab/", "/ws/runs/1/"])
async def test_it_closes_anonymous_websockets(path, settings):
    origin = settings.LAB_ALLOWED_ORIGINS[0]
    communicator = WebsocketCommunicator(
        application, path, headers=[(b"origin", origin.encode()), (b"host", b"127.0.0.1:8000")]
    )
    connected, _code = await communicator.connect()
    assert not connected
    await communicator.disconnect()
