import pytest
from django.core.management import call_command

from accounts.models import LoginLink
from accounts.services import operator_bootstrap


@pytest.mark.django_db
def test_it_creates_the_operator_and_a_one_time_link(client):
    user, token = operator_bootstrap()
    assert user.is_superuser and not user.has_usable_password()
    assert client.get(f"/account/once/{token}/").status_code == 200  # a GET never burns the link
    response = client.post(f"/account/once/{token}/")
    assert response.status_code == 302 and response["Location"] == "/account/password/"
    assert client.get("/").status_code == 200


@pytest.mark.django_db
def test_the_link_works_once(client):
    user, token = operator_bootstrap()
    first = client.post(f"/account/once/{token}/")
    assert first.status_code == 302 and first["Location"] == "/account/password/"
    assert client.session["_auth_user_id"] == str(user.pk)  # the first redemption logged in
    client.logout()
    assert client.post(f"/account/once/{token}/").status_code == 410
    assert "_auth_user_id" not in client.session
    assert client.get("/").status_code == 302


@pytest.mark.django_db
def test_only_the_hash_is_stored():
    _, token = operator_bootstrap()
    assert not LoginLink.objects.filter(digest=token).exists()


@pytest.mark.django_db
def test_it_does_nothing_once_an_operator_exists(operator):
    assert operator_bootstrap() is None


@pytest.mark.django_db
def test_set_password_then_log_in(client):
    _, token = operator_bootstrap()
    client.post(f"/account/once/{token}/")
    pw = "a long enough passphrase 42"
    response = client.post("/account/password/", {"new_password1": pw, "new_password2": pw})
    assert response.status_code == 302
    client.logout()
    response = client.post("/login/", {"username": "operator", "password": pw})
    assert response.status_code == 302


@pytest.mark.django_db
def test_login_is_rate_limited(client, operator):
    for _ in range(10):
        client.post("/login/", {"username": operator.username, "password": "wrong"})
    response = client.post("/login/", {"username": operator.username, "password": "wrong"})
    assert response.status_code == 429


@pytest.mark.django_db
def test_login_link_command_prints_a_link(capsys, operator):
    call_command("login_link", "--username", operator.username)
    assert "/account/once/" in capsys.readouterr().out
