"""POST /providers/<id>/auth/login/code: the pasted code goes to the provider, once."""

import pytest

from providers.errors import InvalidCode, LoginFailed, LoginTimeout

pytestmark = pytest.mark.django_db
URL = "/providers/fake/auth/login/code"
HX = {"hx-request": "true"}


@pytest.fixture
def pending(fake):
    fake.login_start()
    return fake


def test_it_logs_in_and_replaces_the_whole_card(authed_client, pending, lab_group):
    response = authed_client.post(URL, {"code": "  abc-123#state_x  "}, headers=HX)
    assert response.status_code == 200
    assert pending.codes == ["abc-123#state_x"]  # trimmed, and reached the provider
    html = response.content.decode()
    assert "Logged in as <strong>operator@example.invalid</strong>" in html
    assert response["hx-retarget"] == "#auth-card-fake"
    assert response["hx-reswap"] == "outerHTML"
    pushed = lab_group.receive()
    assert pushed["type"] == "lab.html"
    assert 'data-event="provider.auth.changed"' in pushed["html"]


def test_it_answers_json(authed_client, pending):
    response = authed_client.post(URL, {"code": "abc"}, headers={"accept": "application/json"})
    assert response.json()["status"] == {
        "logged_in": True,
        "account": "operator@example.invalid",
        "method": "oauth",
    }


@pytest.mark.parametrize("code", ["", "   ", "abc def", "abc\ndef", "abc\x00", "x" * 513])
def test_it_refuses_a_malformed_code_without_calling_the_provider(authed_client, pending, code, lab_group):
    response = authed_client.post(URL, {"code": code}, headers=HX)
    assert response.status_code == 400
    html = response.content.decode()
    assert html.lstrip().startswith('<form class="auth-code"')  # the login stays on screen
    assert 'role="alert"' in html
    assert "hx-retarget" not in response
    assert pending.codes == []
    assert pending.pending
    lab_group.assert_silent()


def test_the_error_never_echoes_the_code(authed_client, pending):
    response = authed_client.post(URL, {"code": "secret-code with space"}, headers=HX)
    assert "secret-code" not in response.content.decode()


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        (InvalidCode("That code wasn't accepted."), 400, "invalid_code"),
        (LoginTimeout("The login waited too long."), 504, "login_timeout"),
        (LoginFailed("The sign-in server is unreachable."), 502, "login_failed"),
    ],
)
def test_it_maps_provider_errors(authed_client, pending, error, status, kind, lab_group):
    pending.error = error
    response = authed_client.post(URL, {"code": "abc"}, headers={"accept": "application/json"})
    assert response.status_code == status
    assert response.json() == {"error": kind, "message": str(error)}
    lab_group.assert_silent()  # the status did not change


def test_a_refused_code_shows_the_reason_in_the_card(authed_client, pending):
    pending.error = InvalidCode("That code wasn't accepted.")
    response = authed_client.post(URL, {"code": "abc"}, headers=HX)
    assert response.status_code == 400
    html = response.content.decode()
    assert "That code wasn&#x27;t accepted." in html
    assert "Log in to Fake Agent" in html  # start again
    assert response["hx-retarget"] == "#auth-card-fake"


def test_a_code_without_a_pending_login_is_refused(authed_client, fake):
    response = authed_client.post(URL, {"code": "abc"}, headers={"accept": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_code"


def test_it_refuses_get(authed_client, pending):
    assert authed_client.get(URL).status_code == 405


def test_an_unknown_provider_is_404(authed_client):
    assert authed_client.post("/providers/nope/auth/login/code", {"code": "abc"}).status_code == 404
