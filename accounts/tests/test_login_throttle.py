"""Guessing stays infeasible, and a flood of wrong passwords from any local
process (loopback: one address for all of them) cannot keep the operator out."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts import ratelimit
from accounts.models import LoginLink

PASSWORD = "correct horse battery staple"  # tests.factories.UserFactory's


def attempt(client: Client, username: str, password: str) -> int:
    return client.post("/login/", {"username": username, "password": password}).status_code


def flood(username: str, n: int = 200) -> None:
    """Wrong passwords from another local process: the same loopback address, no cookies."""
    attacker = Client()
    for _ in range(n):
        attempt(attacker, username, "wrong")


@pytest.fixture
def clock(monkeypatch):
    """A frozen clock: a test that expects the account's backoff to hold after a flood must not
    depend on the flood taking less than its first wait (1 s), which a loaded CI box broke."""
    now = [1_000_000.0]
    monkeypatch.setattr(ratelimit.time, "time", lambda: now[0])
    return now


@pytest.mark.django_db
def test_the_operators_browser_logs_in_through_a_flood(operator):
    browser = Client()
    assert attempt(browser, operator.username, PASSWORD) == 302  # it has logged in before
    browser.post("/logout/")  # not Client.logout(): that drops every cookie
    flood(operator.username)
    assert attempt(browser, operator.username, PASSWORD) == 302
    assert "_auth_user_id" in browser.session


@pytest.mark.django_db
def test_a_new_browser_during_a_flood_is_told_the_way_back_and_the_link_works(operator, clock):
    flood(operator.username)
    newcomer = Client()
    response = newcomer.post("/login/", {"username": operator.username, "password": PASSWORD})
    assert response.status_code == 429
    body = response.content.decode()
    assert "Too many failed logins for this account" in body and "make login-link" in body
    assert int(response["Retry-After"]) > 0
    token = LoginLink.issue(operator)
    assert newcomer.post(f"/account/once/{token}/").status_code == 302
    assert "_auth_user_id" in newcomer.session
    newcomer.post("/logout/")
    assert attempt(newcomer, operator.username, PASSWORD) == 302  # and it is trusted from now on


@pytest.mark.django_db
def test_the_accounts_backoff_doubles_with_each_failure(operator, clock):
    guesser = Client(REMOTE_ADDR="10.1.1.1")  # its own address: only the account limit applies
    for _ in range(ratelimit.FREE_FAILURES):
        assert attempt(guesser, operator.username, "wrong") == 200
    waits = []
    for _ in range(6):
        response = guesser.post("/login/", {"username": operator.username, "password": "wrong"})
        assert response.status_code == 429  # immediately after a failure: refused, not judged
        wait = int(response["Retry-After"])
        waits.append(wait)
        clock[0] += wait
        assert attempt(guesser, operator.username, "wrong") == 200
    assert waits == [1, 2, 4, 8, 16, 32]
    # The right password is refused too while the account waits: a guess is not judged early.
    assert attempt(guesser, operator.username, PASSWORD) == 429


@pytest.mark.django_db
def test_the_backoff_is_capped_and_a_success_clears_it(operator, clock):
    guesser = Client(REMOTE_ADDR="10.1.1.2")
    for _ in range(40):
        clock[0] += ratelimit.MAX_BACKOFF_SECONDS
        attempt(guesser, operator.username, "wrong")
    response = guesser.post("/login/", {"username": operator.username, "password": "wrong"})
    assert int(response["Retry-After"]) <= ratelimit.MAX_BACKOFF_SECONDS
    clock[0] += ratelimit.MAX_BACKOFF_SECONDS
    assert attempt(guesser, operator.username, PASSWORD) == 302
    guesser.post("/logout/")
    other = Client(REMOTE_ADDR="10.1.1.3")
    assert attempt(other, operator.username, "wrong") == 200  # the count started over


@pytest.mark.django_db
def test_a_device_cookie_is_for_its_own_account_and_cannot_be_forged(operator, clock):
    from tests.factories import UserFactory

    other = UserFactory()
    browser = Client()
    assert attempt(browser, other.username, PASSWORD) == 302
    browser.post("/logout/")  # not Client.logout(): that drops every cookie
    flood(operator.username)
    assert attempt(browser, operator.username, PASSWORD) == 429  # trusted for `other` only
    forged = Client()
    forged.cookies[ratelimit.DEVICE_COOKIE] = f'{{"u": "{operator.username}", "d": "x"}}'
    assert attempt(forged, operator.username, PASSWORD) == 429


@pytest.mark.django_db
def test_a_trusted_browser_is_still_limited_per_minute(operator):
    browser = Client()
    assert attempt(browser, operator.username, PASSWORD) == 302
    browser.post("/logout/")  # not Client.logout(): that drops every cookie
    for _ in range(ratelimit.MAX_ATTEMPTS):
        assert attempt(browser, operator.username, "wrong") == 200
    assert attempt(browser, operator.username, PASSWORD) == 429


@pytest.mark.django_db
def test_many_usernames_from_one_address_hit_the_address_limit(operator):
    """Each account's backoff is never reached (one guess per username), so only the limit per
    address stops a guesser spraying one password over many accounts."""
    from tests.factories import UserFactory

    accounts = [UserFactory().username for _ in range(ratelimit.MAX_ATTEMPTS + 1)]
    sprayer = Client(REMOTE_ADDR="10.2.2.2")
    for username in accounts[: ratelimit.MAX_ATTEMPTS]:
        assert attempt(sprayer, username, "wrong") == 200
    response = sprayer.post("/login/", {"username": accounts[-1], "password": PASSWORD})
    assert response.status_code == 429  # the right password, refused unjudged
    assert "Too many login attempts from this address" in response.content.decode()
    assert int(response["Retry-After"]) == ratelimit.WINDOW_SECONDS
    assert "_auth_user_id" not in sprayer.session
    # Only that address: the operator elsewhere is judged as usual.
    assert attempt(Client(REMOTE_ADDR="10.2.2.3"), operator.username, PASSWORD) == 302
