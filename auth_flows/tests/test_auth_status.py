"""GET /providers/<id>/auth/status."""

import pytest

pytestmark = pytest.mark.django_db


def test_it_renders_the_card(authed_client, fake):
    fake.logged_in = True
    response = authed_client.get("/providers/fake/auth/status")
    assert response.status_code == 200
    assert "Logged in as <strong>operator@example.invalid</strong>" in response.content.decode()


def test_it_answers_json(authed_client):
    response = authed_client.get("/providers/keyed/auth/status", headers={"accept": "application/json"})
    assert response.json()["flow"] == {
        "kind": "api-key",
        "instructions": "Set the key in lab's agent environment and restart lab.",
    }
    assert response.json()["status"] == {"logged_in": False, "account": "", "method": ""}


def test_an_unknown_provider_is_404(authed_client):
    response = authed_client.get("/providers/nope/auth/status", headers={"accept": "application/json"})
    assert response.status_code == 404
    assert response.json()["error"] == "unknown_provider"


def test_it_refuses_post(authed_client):
    assert authed_client.post("/providers/fake/auth/status").status_code == 405
