"""/account/password/: a logged-in session changes the password only with the current one, unless
it came in through a fresh one-time link (the way back in when the password is forgotten)."""

import time

import pytest
from django.contrib.auth import get_user_model

from accounts.models import LoginLink
from accounts.views import LINK_GRACE_S, LINK_LOGIN_KEY

OLD = "the operator's current passphrase 7"
NEW = "a brand new long passphrase 42"


@pytest.fixture
def operator_with_password(operator):
    operator.set_password(OLD)
    operator.save()
    return operator


@pytest.fixture
def logged_in(client, operator_with_password):
    """A browser logged in with the password (not by a link)."""
    client.force_login(operator_with_password)
    return client


def _password_is(user, password: str) -> bool:
    return get_user_model().objects.get(pk=user.pk).check_password(password)


@pytest.mark.django_db
def test_a_session_alone_cannot_change_the_password(logged_in, operator_with_password):
    body = logged_in.get("/account/password/").content.decode()
    assert 'name="old_password"' in body and "make login-link" in body
    response = logged_in.post("/account/password/", {"new_password1": NEW, "new_password2": NEW})
    assert response.status_code == 200
    assert "This field is required" in response.content.decode()
    assert _password_is(operator_with_password, OLD)


@pytest.mark.django_db
def test_a_wrong_current_password_changes_nothing(logged_in, operator_with_password):
    data = {"old_password": "not it at all", "new_password1": NEW, "new_password2": NEW}
    response = logged_in.post("/account/password/", data)
    assert response.status_code == 200 and "incorrectly" in response.content.decode()
    assert _password_is(operator_with_password, OLD)


@pytest.mark.django_db
def test_the_current_password_changes_it(logged_in, operator_with_password):
    data = {"old_password": OLD, "new_password1": NEW, "new_password2": NEW}
    assert logged_in.post("/account/password/", data).status_code == 302
    assert _password_is(operator_with_password, NEW)


@pytest.mark.django_db
def test_a_fresh_login_link_sets_a_forgotten_password_once(client, operator_with_password):
    token = LoginLink.issue(operator_with_password)
    assert client.post(f"/account/once/{token}/")["Location"] == "/account/password/"
    assert 'name="old_password"' not in client.get("/account/password/").content.decode()
    assert client.post("/account/password/", {"new_password1": NEW, "new_password2": NEW}).status_code == 302
    assert _password_is(operator_with_password, NEW)
    # Used: the next change needs the current password again.
    again = "yet another long passphrase 9"
    client.post("/account/password/", {"new_password1": again, "new_password2": again})
    assert _password_is(operator_with_password, NEW)


@pytest.mark.django_db
def test_a_login_link_session_past_its_grace_needs_the_current_password(client, operator_with_password):
    client.post(f"/account/once/{LoginLink.issue(operator_with_password)}/")
    session = client.session
    session[LINK_LOGIN_KEY] = time.time() - LINK_GRACE_S - 1
    session.save()
    client.post("/account/password/", {"new_password1": NEW, "new_password2": NEW})
    assert _password_is(operator_with_password, OLD)
