"""Case 9: secrets and binding. A missing/short/default SECRET_KEY (also a torn or tampered key
file) is refused; a non-loopback bind needs LAB_ALLOW_REMOTE *and* an operator password lab saw
pass its validators (runs/management/commands/serve.py); every login form is rate-limited,
admin's included; the only token in a URL is the single-use first-login link. (`check --deploy`
runs in `make check`; tests/test_settings.py has the basic refusals.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from accounts.models import LoginLink
from accounts.ratelimit import MAX_ATTEMPTS
from accounts.signals import password_is_strong
from tests.security.support import http_routes
from tests.test_settings import GOOD_KEY, REPO

STRONG = "correct horse battery staple 42 lab"


@pytest.fixture(autouse=True)
def _fresh_rate_limit():
    cache.clear()
    yield
    cache.clear()


# --- the secret key and the bind: many settings variants in one interpreter ------------------

_VERDICTS = """
import importlib, json, os, sys
from django.core.exceptions import ImproperlyConfigured
out = []
for case in json.loads(sys.argv[1]):
    for k in ("SECRET_KEY", "LAB_BIND", "LAB_ALLOW_REMOTE"):
        os.environ.pop(k, None)
    os.environ.update(case["env"])
    os.environ["LAB_DATA_DIR"] = case["data"]
    if case.get("key_file") is not None:
        os.makedirs(case["data"], exist_ok=True)
        open(os.path.join(case["data"], "secret_key"), "w").write(case["key_file"])
    sys.modules.pop("lab.settings", None)
    try:
        importlib.import_module("lab.settings")
        out.append("ok")
    except ImproperlyConfigured as exc:
        out.append("refused: " + str(exc))
print(json.dumps(out))
"""


def verdicts(tmp_path: Path, cases: list[dict]) -> list[str]:
    import json

    for i, case in enumerate(cases):
        case["data"] = str(tmp_path / f"data{i}")
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", _VERDICTS, json.dumps(cases)],
        cwd=REPO, env=base, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


BAD_KEYS = ["", "   ", "\n", "short", "a" * 100, "abcd" * 20, "django-insecure-" + GOOD_KEY, "changeme"]


def test_a_bad_key_file_is_refused_loud(tmp_path):
    # A key file that is empty (torn), tampered or a placeholder never becomes the key.
    results = verdicts(tmp_path, [{"env": {}, "key_file": key} for key in BAD_KEYS])
    for key, result in zip(BAD_KEYS, results, strict=True):
        assert result.startswith("refused: SECRET_KEY"), (key, result)


def test_a_bad_key_in_the_environment_is_refused_loud(tmp_path):
    keys = ["   ", "x" * 49, "ab" * 40, "django-insecure-" + GOOD_KEY]
    for key, result in zip(keys, verdicts(tmp_path, [{"env": {"SECRET_KEY": k}} for k in keys]), strict=True):
        assert result.startswith("refused: SECRET_KEY"), (key, result)


def test_an_empty_environment_key_falls_back_to_the_generated_one(tmp_path):
    assert verdicts(tmp_path, [{"env": {"SECRET_KEY": ""}}]) == ["ok"]
    assert len((tmp_path / "data0" / "secret_key").read_text()) >= 50


def test_only_loopback_binds_start_without_the_explicit_allow(tmp_path):
    refused = ["[::]:8000", "0:8000", "0.0.0.0:8000", "127.0.0.1.nip.io:8000", "localhost.evil.example:8000"]
    allowed = ["127.0.0.1:8000", "127.0.0.9:8000", "localhost:8000", "[::1]:8000"]
    cases = [{"env": {"LAB_BIND": b}} for b in [*refused, *allowed]]
    results = verdicts(tmp_path, cases)
    for bind, result in zip(refused, results[: len(refused)], strict=True):
        assert "not a loopback address" in result, (bind, result)
    assert results[len(refused) :] == ["ok"] * len(allowed)
    # The allow flag is the only way past, and only with a real key (tests/test_settings.py).
    assert verdicts(tmp_path, [{"env": {"LAB_BIND": "[::]:8000", "LAB_ALLOW_REMOTE": "true"}}]) == ["ok"]


@pytest.fixture
def remote(settings):
    settings.BIND_HOST, settings.LAB_BIND, settings.LAB_ALLOW_REMOTE = "0.0.0.0", "0.0.0.0:8000", True
    return settings


@pytest.mark.django_db
def test_serve_refuses_a_remote_bind_when_no_operator_has_a_password(remote):
    with pytest.raises(CommandError, match="no operator has a password"):
        call_command("serve", "--no-exec")


@pytest.mark.django_db
@pytest.mark.parametrize("weak", ["password", "operator1234", "12345678901234", "short"])
def test_serve_refuses_a_remote_bind_with_a_weak_password(remote, operator, weak):
    operator.set_password(weak)
    operator.save()
    assert not password_is_strong(operator)
    with pytest.raises(CommandError, match=operator.username):
        call_command("serve", "--no-exec")


@pytest.mark.django_db
def test_serve_refuses_a_remote_bind_with_a_password_it_never_saw_checked(remote, operator):
    # The factory (like createsuperuser's manager) stores a hash without set_password: unknown.
    assert operator.has_usable_password() and not password_is_strong(operator)
    with pytest.raises(CommandError):
        call_command("serve", "--no-exec")


@pytest.mark.django_db
def test_serve_refuses_when_any_loginable_account_is_weak(remote, operator):
    from tests.factories import UserFactory

    operator.set_password(STRONG)
    operator.save()
    other = UserFactory(is_superuser=False, is_staff=False)
    other.set_password("weak")
    other.save()
    with pytest.raises(CommandError, match=other.username):
        call_command("serve", "--no-exec")
    other.is_active = False  # a disabled account cannot log in: it no longer counts
    other.save()
    call_command("serve", "--no-exec")


@pytest.mark.django_db
def test_serve_starts_a_remote_bind_with_a_strong_password(remote, operator, capsys):
    operator.set_password(STRONG)
    operator.save()
    assert password_is_strong(operator)
    call_command("serve", "--no-exec")
    # A password changed behind lab's back (a raw hash update) voids the verdict.
    type(operator).objects.filter(pk=operator.pk).update(password=operator.password + "x")
    operator.refresh_from_db()
    assert not password_is_strong(operator)
    with pytest.raises(CommandError):
        call_command("serve", "--no-exec")


@pytest.mark.django_db
def test_serve_on_loopback_needs_no_password(settings, operator):
    assert settings.BIND_HOST == "127.0.0.1"
    call_command("serve", "--no-exec")


def test_serve_refuses_a_remote_bind_end_to_end(tmp_path):
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "LAB_DATA_DIR": str(tmp_path / "data"),
        "LAB_TMUX_SOCKET": f"labsec-{os.getpid()}",
        "DJANGO_SETTINGS_MODULE": "lab.settings",
        "LAB_BIND": "0.0.0.0:18765",
        "LAB_ALLOW_REMOTE": "true",
        "SECRET_KEY": GOOD_KEY,
    }
    manage = [sys.executable, str(Path(REPO) / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=REPO, check=True, timeout=120)
    proc = subprocess.run([*manage, "serve"], env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "no operator has a password" in proc.stderr
    assert "/account/once/" not in proc.stdout  # no login link is printed for a remote bind


# --- login rate limit ------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_right_password_is_refused_too_once_the_limit_is_hit(client, operator):
    for _ in range(MAX_ATTEMPTS):
        client.post("/login/", {"username": operator.username, "password": "wrong"})
    response = client.post(
        "/login/", {"username": operator.username, "password": "correct horse battery staple"}
    )
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_spoofed_forwarding_headers_do_not_reset_the_limit(client, operator):
    for i in range(MAX_ATTEMPTS):
        client.post(
            "/login/",
            {"username": operator.username, "password": "wrong"},
            HTTP_X_FORWARDED_FOR=f"10.0.0.{i}",
        )
    response = client.post(
        "/login/", {"username": operator.username, "password": "wrong"}, HTTP_X_FORWARDED_FOR="10.9.9.9"
    )
    assert response.status_code == 429


@pytest.mark.django_db
def test_admin_login_goes_through_the_same_limit(client, operator):
    # admin's own form is replaced (accounts.apps): GET and POST end at lab's rate-limited login.
    response = client.get("/admin/login/?next=/admin/runs/run/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/") and "next=/admin/runs/run/" in response["Location"]
    response = client.post(
        "/admin/login/", {"username": operator.username, "password": "correct horse battery staple"}
    )
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert "_auth_user_id" not in client.session
    for _ in range(MAX_ATTEMPTS):
        client.post("/login/", {"username": operator.username, "password": "wrong"})
    assert client.post("/login/", {"username": operator.username, "password": "wrong"}).status_code == 429


@pytest.mark.django_db
def test_admin_login_of_a_logged_in_non_staff_user_is_refused_not_looped(client):
    from tests.factories import UserFactory

    client.force_login(UserFactory(is_staff=False, is_superuser=False))
    response = client.get("/admin/", follow=True)
    assert response.status_code == 403
    assert len(response.redirect_chain) <= 2


@pytest.mark.django_db
def test_lab_login_still_gets_staff_into_the_admin(client, operator):
    response = client.post(
        "/login/?next=/admin/", {"username": operator.username, "password": "correct horse battery staple"}
    )
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


# --- tokens in URLs --------------------------------------------------------------------------


def test_the_one_time_link_is_the_only_route_with_a_token():
    # A route that takes a token or a key as a parameter (a path word like "keyboard" is not one).
    with_token = [name for route, name in http_routes() if re.search(r"<(\w+:)?\w*(token|key)\w*>", route)]
    assert with_token == ["accounts:login_link"]


@pytest.mark.django_db
def test_no_page_puts_a_session_or_csrf_token_in_a_url(authed_client, operator):
    authed_client.get("/")
    secrets = [authed_client.cookies["sessionid"].value, authed_client.cookies["csrftoken"].value]
    import re

    for path in ("/", "/runs/new/", "/providers/", "/account/password/", "/admin/"):
        body = authed_client.get(path).content.decode()
        urls = re.findall(r'(?:href|src|action|ws-connect|hx-get|hx-post)="([^"]*)"', body)
        assert urls, path
        for url in urls:
            assert not any(s in url for s in secrets), (path, url)
            assert "token" not in url.lower() and "session" not in url.lower(), (path, url)


@pytest.mark.django_db
def test_the_one_time_link_is_single_use_expires_and_leaks_nowhere(operator):
    client = Client()
    token = LoginLink.issue(operator)
    page = client.get(f"/account/once/{token}/")
    assert page["Referrer-Policy"] == "same-origin"  # the token never leaves in a Referer
    assert "no-cache" in page["Cache-Control"] or "no-store" in page["Cache-Control"]
    assert token not in page.content.decode()
    assert client.post(f"/account/once/{token}/").status_code == 302
    other = Client()
    assert other.post(f"/account/once/{token}/").status_code == 410
    old = LoginLink.issue(operator)
    LoginLink.objects.filter(used_at__isnull=True).update(created_at=timezone.now() - timedelta(hours=25))
    assert other.post(f"/account/once/{old}/").status_code == 410
    assert other.post("/account/once/not-a-token/").status_code == 410
    assert "_auth_user_id" not in other.session
