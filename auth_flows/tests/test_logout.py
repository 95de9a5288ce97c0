"""POST /providers/<id>/auth/logout."""

import pytest

from providers.errors import LoginFailed

pytestmark = pytest.mark.django_db
URL = "/providers/fake/auth/logout"


def test_it_logs_out_and_pushes_the_change(authed_client, fake, lab_group):
    fake.logged_in = True
    response = authed_client.post(URL, headers={"hx-request": "true"})
    assert response.status_code == 200
    assert "Not logged in" in response.content.decode()
    assert not fake.logged_in
    pushed = lab_group.receive()
    assert 'id="auth-card-fake"' in pushed["html"] and "Not logged in" in pushed["html"]


def test_it_kills_a_pending_login(authed_client, fake):
    fake.login_start()
    authed_client.post(URL)
    assert not fake.pending


def test_a_failure_is_502(authed_client, fake):
    fake.logged_in = True
    fake.error = LoginFailed("Logging out failed: it did not finish")
    response = authed_client.post(URL, headers={"accept": "application/json"})
    assert response.status_code == 502
    assert response.json()["message"] == "Logging out failed: it did not finish"


def test_it_refuses_get(authed_client, fake):
    fake.logged_in = True
    assert authed_client.get(URL).status_code == 405
    assert fake.logged_in
