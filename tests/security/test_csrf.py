"""Case 4: CSRF on every POST. A cross-site form post, a `no-cors` fetch, a foreign or `null`
Origin — with or without a token the attacker managed to get — is refused with 403 before any
view runs, and nothing reaches tmux or the provider. Seeding has no endpoint of its own: it runs
inside "new run", which is covered here."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import LoginLink
from runs import services
from runs.models import Run
from tests.security.support import concrete, http_routes

CROSS_SITE = {
    "HTTP_ORIGIN": "http://evil.example",
    "HTTP_REFERER": "http://evil.example/page",
    "HTTP_SEC_FETCH_SITE": "cross-site",
    "HTTP_SEC_FETCH_MODE": "no-cors",
    "HTTP_SEC_FETCH_DEST": "empty",
}
# Origins a browser would send for a page that is not lab's.
BAD_ORIGINS = [
    "http://evil.example",
    "null",
    "http://127.0.0.1:8001",
    "https://testserver",
    "http://testserver.evil",
]


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/csrf")


@pytest.fixture
def csrf_client(operator) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    client.get("/")  # the page sets the csrftoken cookie, as a browser tab would have it
    return client


def _endpoints(run: Run, git_repo) -> list[tuple[str, dict[str, str]]]:
    """Every state-changing POST lab has, with a body that would succeed with a token."""
    endpoints = [
        (f"/runs/{run.pk}/reply/", {"text": "rm -rf ~"}),
        (f"/runs/{run.pk}/interrupt/", {}),
        (f"/runs/{run.pk}/end/", {}),
        (
            "/runs/new/",
            {"provider": "fake", "repository": str(git_repo), "branch": "lab/evil", "name": "evil"},
        ),
        ("/providers/fake/auth/login/start", {}),
        ("/providers/fake/auth/login/code", {"code": "good-code"}),
        ("/providers/fake/auth/logout", {}),
        ("/logout/", {}),
        (
            "/account/password/",
            {"new_password1": "attacker chosen pw 123", "new_password2": "attacker chosen pw 123"},
        ),
    ]
    endpoints.append(
        (reverse("runs:answer", args=[run.pk]), {"tool_use_id": "t1", "count": "1", "answers-0": "0"})
    )
    return endpoints


def _assert_nothing_happened(run: Run, fake_provider, csrf_client: Client) -> None:
    assert fake_provider.sent == []
    assert not fake_provider.pending_login and not fake_provider.logged_in
    run.refresh_from_db()
    assert not run.is_ended
    from providers.tmux import Tmux

    assert Tmux(run.tmux_socket).has_session(run.tmux_session)
    assert Run.objects.count() == 1
    assert csrf_client.get("/").status_code == 200  # still logged in: logout did not run


@pytest.mark.django_db
def test_every_route_refuses_a_post_without_a_token(csrf_client, run, fake_provider):
    for route, _name in http_routes():
        path = concrete(route, run.pk)
        response = csrf_client.post(path, {"text": "x"})
        assert response.status_code == 403, (path, response.status_code)
    _assert_nothing_happened(run, fake_provider, csrf_client)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"]
)
def test_a_cross_site_form_post_gets_403_and_reaches_nothing(
    csrf_client, run, fake_provider, git_repo, content_type
):
    for path, data in _endpoints(run, git_repo):
        if content_type == "text/plain":
            body = "&".join(f"{k}={v}" for k, v in data.items())
            response = csrf_client.post(path, body, content_type=content_type, **CROSS_SITE)
        elif content_type == "multipart/form-data":
            response = csrf_client.post(path, data, **CROSS_SITE)
        else:
            from urllib.parse import urlencode

            response = csrf_client.post(path, urlencode(data), content_type=content_type, **CROSS_SITE)
        assert response.status_code == 403, (path, response.status_code)
    _assert_nothing_happened(run, fake_provider, csrf_client)


@pytest.mark.django_db
@pytest.mark.parametrize("origin", BAD_ORIGINS)
def test_even_a_valid_token_is_refused_from_a_foreign_origin(
    csrf_client, run, fake_provider, git_repo, origin
):
    token = csrf_client.cookies["csrftoken"].value
    for path, data in _endpoints(run, git_repo):
        response = csrf_client.post(
            path,
            {**data, "csrfmiddlewaretoken": token},
            HTTP_ORIGIN=origin,
            HTTP_SEC_FETCH_SITE="cross-site",
        )
        assert response.status_code == 403, (path, origin, response.status_code)
        response = csrf_client.post(
            path, data, HTTP_X_CSRFTOKEN=token, HTTP_ORIGIN=origin, HTTP_HX_REQUEST="true"
        )
        assert response.status_code == 403, (path, origin, response.status_code)
    _assert_nothing_happened(run, fake_provider, csrf_client)


@pytest.mark.django_db
def test_a_token_without_its_cookie_or_the_wrong_token_is_refused(csrf_client, run, fake_provider, git_repo):
    token = csrf_client.cookies["csrftoken"].value
    other = Client(enforce_csrf_checks=True)
    other.get("/login/")
    foreign_token = other.cookies["csrftoken"].value  # a token the attacker got for their own browser
    for path, data in _endpoints(run, git_repo):
        assert csrf_client.post(path, {**data, "csrfmiddlewaretoken": foreign_token}).status_code == 403, path
        assert csrf_client.post(path, data, HTTP_X_CSRFTOKEN="x" * 64).status_code == 403, path
    bare = Client(enforce_csrf_checks=True)
    bare.force_login(run_operator := _operator())  # logged in, but the tab never got a cookie
    for path, data in _endpoints(run, git_repo):
        assert bare.post(path, {**data, "csrfmiddlewaretoken": token}).status_code == 403, path
    assert run_operator.is_active
    _assert_nothing_happened(run, fake_provider, csrf_client)


def _operator():
    from tests.factories import UserFactory

    return UserFactory()


@pytest.mark.django_db
def test_the_same_request_with_lab_s_own_token_goes_through(csrf_client, run, fake_provider):
    # The control: the refusals above are about the token and the origin, nothing else.
    token = csrf_client.cookies["csrftoken"].value
    response = csrf_client.post(
        f"/runs/{run.pk}/reply/", {"text": "hello"}, HTTP_X_CSRFTOKEN=token, HTTP_ORIGIN="http://testserver"
    )
    assert response.status_code == 200
    assert fake_provider.sent == [("reply", "hello")]


@pytest.mark.django_db
def test_login_and_the_one_time_link_need_a_token_too(operator):
    client = Client(enforce_csrf_checks=True)
    token = LoginLink.issue(operator)
    # Login CSRF: logging the victim into the attacker's account is refused.
    assert client.post("/login/", {"username": operator.username, "password": "x"}).status_code == 403
    assert client.post(f"/account/once/{token}/", **CROSS_SITE).status_code == 403
    assert LoginLink.objects.redeemable().count() == 1  # the refused post did not burn the link
    assert "_auth_user_id" not in client.session


def test_the_cookies_are_not_sent_cross_site(settings):
    assert settings.CSRF_COOKIE_SAMESITE == "Strict"
    assert settings.SESSION_COOKIE_SAMESITE in ("Lax", "Strict")
    assert settings.SESSION_COOKIE_HTTPONLY


@pytest.mark.django_db
def test_a_token_is_not_enough_without_origin_or_referer(csrf_client, run, fake_provider, git_repo):
    """A client with the session cookie and a fresh token, but no Origin and no Referer (no
    browser sends a POST like that), is refused; lab's own Referer or Origin lets it through."""
    token = csrf_client.cookies["csrftoken"].value
    for path, data in _endpoints(run, git_repo):
        response = csrf_client.post(path, data, HTTP_X_CSRFTOKEN=token)
        assert response.status_code == 403, (path, response.status_code)
        response = csrf_client.post(
            path, data, HTTP_X_CSRFTOKEN=token, HTTP_REFERER="http://evil.example/runs/"
        )
        assert response.status_code == 403, (path, response.status_code)
    _assert_nothing_happened(run, fake_provider, csrf_client)
    reply = f"/runs/{run.pk}/reply/"
    ok = csrf_client.post(
        reply, {"text": "hi"}, HTTP_X_CSRFTOKEN=token, HTTP_REFERER=f"http://testserver/runs/{run.pk}/"
    )
    assert ok.status_code == 200
    ok = csrf_client.post(reply, {"text": "again"}, HTTP_X_CSRFTOKEN=token, HTTP_ORIGIN="http://testserver")
    assert ok.status_code == 200
    assert fake_provider.sent == [("reply", "hi"), ("reply", "again")]


# Referers that start like lab's own origin, or name its host, but are another origin: a
# Referer counts only when its scheme://host:port is exactly lab's.
LOOKALIKE_REFERERS = [
    "http://testserver.evil/runs/",  # a longer host
    "http://testserver@evil.example/runs/",  # userinfo: the host is evil.example
    "http://testserver:8080/runs/",  # another port on the same host
    "https://testserver/runs/",  # another scheme
]


@pytest.mark.django_db
@pytest.mark.parametrize("referer", LOOKALIKE_REFERERS)
def test_a_referer_that_only_looks_like_lab_s_origin_is_refused(
    csrf_client, run, fake_provider, git_repo, referer
):
    token = csrf_client.cookies["csrftoken"].value
    for path, data in _endpoints(run, git_repo):
        response = csrf_client.post(path, data, HTTP_X_CSRFTOKEN=token, HTTP_REFERER=referer)
        assert response.status_code == 403, (path, referer, response.status_code)
    _assert_nothing_happened(run, fake_provider, csrf_client)
    # The control: lab's exact origin, even with no path, is accepted.
    ok = csrf_client.post(
        f"/runs/{run.pk}/reply/", {"text": "hi"}, HTTP_X_CSRFTOKEN=token, HTTP_REFERER="http://testserver"
    )
    assert ok.status_code == 200 and fake_provider.sent == [("reply", "hi")]
