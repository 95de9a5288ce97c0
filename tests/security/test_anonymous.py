"""Case 1: every HTTP endpoint and websocket refuses an anonymous client — also from 127.0.0.1,
without an Origin header, with htmx or JSON headers, and for a run that really exists (an
agent in a worktree can curl lab). tests/test_auth_required.py walks GET/POST; this adds every
method, the header tricks, the nothing-happened checks and every websocket route."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from accounts.models import LoginLink
from accounts.services import operator_bootstrap
from runs import services
from runs.models import Run
from tests.security.support import concrete, http_routes, session_cookie, ws_headers, ws_routes, ws_try

# Reachable anonymously by design: the login form, the one-time link page, admin's login (which
# only sends the visitor on to lab's rate-limited login).
PUBLIC = {"login", "accounts:login_link", "admin:login"}
METHODS = ["get", "post", "put", "patch", "delete", "options", "head"]
TRICKS = {
    "bare": {},
    "htmx": {"HTTP_HX_REQUEST": "true", "HTTP_ACCEPT": "application/json"},
    "forwarded": {"HTTP_X_FORWARDED_FOR": "127.0.0.1", "HTTP_X_REAL_IP": "127.0.0.1"},
    "same-origin-headers": {"HTTP_SEC_FETCH_SITE": "same-origin", "HTTP_REFERER": "http://127.0.0.1:8000/"},
}


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/anon")


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


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("origin", ["http://127.0.0.1:8000", None])
async def test_it_refuses_every_anonymous_websocket(origin):
    for path in ws_routes():
        accepted, _ = await ws_try(path, ws_headers(origin=origin))
        assert not accepted, path


@pytest.mark.django_db(transaction=True)
async def test_it_refuses_a_forged_or_stale_session_on_every_websocket(operator):
    cookie = await sync_to_async(session_cookie)(operator)
    for path in ws_routes():
        accepted, _ = await ws_try(path, ws_headers(b"sessionid=forged0000000000000000000000000"))
        assert not accepted, path
    # A password change invalidates every session that was open (the session auth hash).
    operator.set_password("a brand new long passphrase 77")
    await sync_to_async(operator.save)()
    for path in ws_routes():
        accepted, _ = await ws_try(path, ws_headers(cookie))
        assert not accepted, path


@pytest.mark.django_db(transaction=True)
async def test_it_refuses_a_deactivated_operators_session(operator):
    cookie = await sync_to_async(session_cookie)(operator)
    assert (await ws_try("/ws/lab/", ws_headers(cookie)))[0]
    operator.is_active = False
    await sync_to_async(operator.save)()
    for path in ws_routes():
        accepted, _ = await ws_try(path, ws_headers(cookie))
        assert not accepted, path


@pytest.mark.django_db
def test_a_deactivated_operator_is_logged_out_of_http(client, operator):
    client.force_login(operator)
    assert client.get("/").status_code == 200
    operator.is_active = False
    operator.save()
    assert client.get("/").status_code == 302


def test_the_websocket_walk_covers_every_route():
    assert {"/ws/lab/", "/ws/runs/1/"} <= set(ws_routes())
