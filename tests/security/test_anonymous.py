"""Case 1: every HTTP endpoint and websocket refuses an anonymous client — also from 127.0.0.1,
without an Origin header, with htmx or JSON headers, and for a run that really exists (an
agent in a worktree can curl lab): every method, the header tricks, the nothing-happened checks
and every websocket route. Each socket refusal is checked by its close code against a run that
exists, beside the same socket logged in and accepted: a refusal for any other reason (no such
run, a foreign origin) would prove nothing about the login check."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from accounts.models import LoginLink
from accounts.services import operator_bootstrap
from live.consumers import CLOSE_UNAUTHENTICATED
from runs.models import Run
from tests.security.support import (
    concrete,
    http_routes,
    session_cookie,
    ws_headers,
    ws_hello,
    ws_routes,
    ws_try,
)

# Reachable anonymously by design: the login form, the one-time link page, admin's login (which
# only sends the visitor on to lab's rate-limited login), and the web app manifest and service
# worker (a browser fetches the manifest without cookies; neither holds anything private).
PUBLIC = {"login", "accounts:login_link", "admin:login", "push:manifest", "push:service_worker"}
METHODS = ["get", "post", "put", "patch", "delete", "options", "head"]
TRICKS = {
    "bare": {},
    "htmx": {"HTTP_HX_REQUEST": "true", "HTTP_ACCEPT": "application/json"},
    "forwarded": {"HTTP_X_FORWARDED_FOR": "127.0.0.1", "HTTP_X_REAL_IP": "127.0.0.1"},
    "same-origin-headers": {"HTTP_SEC_FETCH_SITE": "same-origin", "HTTP_REFERER": "http://127.0.0.1:8000/"},
}


def _protected_paths(run_id: int) -> list[str]:
    return sorted({concrete(route, run_id) for route, name in http_routes() if name not in PUBLIC})


@pytest.mark.django_db
@pytest.mark.parametrize("method", METHODS)
def test_it_refuses_every_method_on_every_protected_path(client, run, fake_provider, method):
    for trick, headers in TRICKS.items():
        for path in _protected_paths(run.pk):
            response = getattr(client, method)(path, REMOTE_ADDR="127.0.0.1", **headers)
            assert response.status_code in (302, 403, 405), (method, trick, path, response.status_code)
            if response.status_code == 302:
                assert response["Location"].startswith(("/login/", "/admin/login/")), (
                    path,
                    response["Location"],
                )
            assert b"Fake Agent" not in response.content and b"fake@" not in response.content
    # Nothing reached the provider or the run's terminal, and nothing changed.
    assert fake_provider.sent == []
    assert not fake_provider.pending_login and not fake_provider.logged_in
    assert not Run.objects.get(pk=run.pk).is_ended
    assert Run.objects.count() == 1


@pytest.mark.django_db
def test_a_real_run_and_a_missing_one_look_the_same_to_an_anonymous_client(client, run):
    # No existence oracle: the login redirect comes before the lookup.
    real = client.get(f"/runs/{run.pk}/")
    missing = client.get(f"/runs/{run.pk + 999}/")
    assert real.status_code == missing.status_code == 302


@pytest.mark.django_db
def test_the_public_pages_reveal_nothing_and_change_nothing(client, operator):
    _, token = operator_bootstrap() or (None, LoginLink.issue(operator))
    assert client.get("/login/").status_code == 200
    # A GET of the one-time link never burns it (a link preview must not log anyone in).
    assert client.get(f"/account/once/{token}/").status_code == 200
    assert LoginLink.objects.redeemable().count() == 1
    assert "_auth_user_id" not in client.session
    # Admin's own login form is not served: it sends the visitor to lab's rate-limited one.
    response = client.get("/admin/login/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


async def assert_refused_for_login(path: str, headers) -> None:
    accepted, code = await ws_try(path, headers)
    assert (accepted, code) == (False, CLOSE_UNAUTHENTICATED), path


@pytest.mark.django_db(transaction=True)
async def test_a_logged_in_socket_is_accepted_on_every_route_and_answers_its_hello(run, operator):
    # The control for the refusals below: the same routes, the same run, a valid session.
    cookie = await sync_to_async(session_cookie)(operator)
    for path in ws_routes(run.pk):
        frames = await ws_hello(path, cookie)
        if path == f"/ws/runs/{run.pk}/":
            assert 'data-seq="-1"' in frames[-1], frames  # the catch-up's cursor: nothing to send yet


@pytest.mark.django_db(transaction=True)
async def test_it_refuses_every_anonymous_websocket(run):
    for path in ws_routes(run.pk):
        await assert_refused_for_login(path, ws_headers())
        # Without an Origin the gate refuses first (test_origins.py); still never accepted.
        assert not (await ws_try(path, ws_headers(origin=None)))[0], path


@pytest.mark.django_db(transaction=True)
async def test_it_refuses_a_forged_or_stale_session_on_every_websocket(run, operator):
    cookie = await sync_to_async(session_cookie)(operator)
    assert await ws_hello(f"/ws/runs/{run.pk}/", cookie)  # valid until the password changes
    for path in ws_routes(run.pk):
        await assert_refused_for_login(path, ws_headers(b"sessionid=forged0000000000000000000000000"))
    # A password change invalidates every session that was open (the session auth hash).
    operator.set_password("a brand new long passphrase 77")
    await sync_to_async(operator.save)()
    for path in ws_routes(run.pk):
        await assert_refused_for_login(path, ws_headers(cookie))


@pytest.mark.django_db(transaction=True)
async def test_it_refuses_a_deactivated_operators_session(run, operator):
    cookie = await sync_to_async(session_cookie)(operator)
    assert await ws_hello(f"/ws/runs/{run.pk}/", cookie)  # valid until the operator is deactivated
    operator.is_active = False
    await sync_to_async(operator.save)()
    for path in ws_routes(run.pk):
        await assert_refused_for_login(path, ws_headers(cookie))


@pytest.mark.django_db
def test_a_deactivated_operator_is_logged_out_of_http(client, operator):
    client.force_login(operator)
    assert client.get("/").status_code == 200
    operator.is_active = False
    operator.save()
    assert client.get("/").status_code == 302


def test_the_walks_cover_every_route():
    paths = {concrete(route) for route, _name in http_routes()}
    assert "/" in paths and "/runs/1/reply/" in paths
    assert any(p.startswith("/admin/") for p in paths)
    assert {"/ws/lab/", "/ws/runs/1/"} <= set(ws_routes())
