"""POST /providers/<id>/auth/login/start: the card shows the sign-in link and a code field."""

import pytest
from django.test import Client

from auth_flows.tests.stubs import LOCAL_URL, LOGIN_URL
from providers.errors import LoginFailed, LoginTimeout
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
URL = "/providers/fake/auth/login/start"


def test_it_starts_a_login_and_shows_the_url(authed_client, fake):
    response = authed_client.post(URL, headers={"hx-request": "true"})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<article id="auth-card-fake"')
    assert f'href="{LOGIN_URL}"' in html
    assert f'data-copy="{LOGIN_URL}"' in html
    assert 'name="code"' in html
    assert fake.pending


def test_it_answers_json_with_the_alternatives(authed_client):
    response = authed_client.post(URL, headers={"accept": "application/json"})
    assert response.json() == {
        "url": LOGIN_URL,
        "alternatives": [{"instructions": "From this machine, open the local link.", "url": LOCAL_URL}],
    }


def test_it_refuses_get(authed_client, fake):
    assert authed_client.get(URL).status_code == 405
    assert not fake.pending


def test_it_enforces_csrf(db, fake):
    client = Client(enforce_csrf_checks=True)
    client.force_login(UserFactory())
    assert client.post(URL).status_code == 403
    assert not fake.pending
    client.get("/providers/")  # sets the csrftoken cookie, as the page does
    token = client.cookies["csrftoken"].value
    assert client.post(URL, headers={"x-csrftoken": token, "origin": "http://testserver"}).status_code == 200
    assert fake.pending


def test_it_requires_login(client, fake):
    response = client.post(URL)
    assert response.status_code == 302
    assert not fake.pending


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        (LoginTimeout("No link within 30 s."), 504, "login_timeout"),
        (LoginFailed("It broke."), 502, "login_failed"),
    ],
)
def test_it_maps_errors_to_statuses(authed_client, fake, error, status, kind):
    fake.error = error
    response = authed_client.post(URL, headers={"accept": "application/json"})
    assert response.status_code == status
    assert response.json() == {"error": kind, "message": str(error)}


def test_an_error_renders_in_the_card(authed_client, fake):
    fake.error = LoginFailed("The sign-in server is unreachable.")
    response = authed_client.post(URL, headers={"hx-request": "true"})
    assert response.status_code == 502
    assert "The sign-in server is unreachable." in response.content.decode()
    assert response["hx-retarget"] == "#auth-card-fake"


def test_an_unknown_provider_is_404(authed_client):
    response = authed_client.post("/providers/nope/auth/login/start")
    assert response.status_code == 404
    assert "nope" in response.content.decode()
