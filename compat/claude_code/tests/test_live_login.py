"""Live: the real `claude auth login` (the pinned version), fully offline, through lab's login routes.

compat §11: the CLI honours HTTPS_PROXY and NODE_EXTRA_CA_CERTS, so a local CONNECT proxy with
a throwaway CA (compat/claude_code/login_proxy.py) plays platform.claude.com and api.anthropic.com and the
whole login runs for real. The agent HOME is private to each test: the operator's credentials
are never touched. Every test ends with no login child left (the `spawned` fixture).
"""

from __future__ import annotations

import re
import subprocess
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from compat.claude_code.login_links import printed_link_shape
from compat.claude_code.login_proxy import Behaviour, ClaudeLoginProxy, claude_certs
from compat.login_proxy import SpawnRecorder, closed_port, leftovers
from providers.claude_code import auth
from providers.registry import _load, get_provider
from tests.factories import UserFactory

pytestmark = [pytest.mark.live, pytest.mark.django_db]

START = "/providers/claude-code/auth/login/start"
CODE = "/providers/claude-code/auth/login/code"
LOGOUT = "/providers/claude-code/auth/logout"
STATUS = "/providers/claude-code/auth/status"
JSON = {"accept": "application/json"}
HX = {"hx-request": "true"}
EMAIL = "operator@example.invalid"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return claude_certs(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def proxy(certs):
    with ClaudeLoginProxy(certs, Behaviour()) as running:
        yield running


@pytest.fixture
def provider(proxy, settings, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    settings.LAB_AGENT_HOME = str(home)  # never the operator's HOME
    settings.LAB_PROVIDERS = {"claude-code": "providers.claude_code.ClaudeCodeProvider"}
    # Test-only login env: the CLI talks to the local proxy and trusts its CA.
    settings.LAB_LOGIN_EXTRA_ENV = {
        **proxy.env(),
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    _load.cache_clear()
    yield get_provider("claude-code")
    _load.cache_clear()


@pytest.fixture
def spawned(monkeypatch):
    recorder = SpawnRecorder(auth._spawn)
    monkeypatch.setattr(auth, "_spawn", recorder)
    yield recorder
    auth._pending.reap_all()
    assert leftovers(recorder.procs) == []


@pytest.fixture
def client(client, db):
    client.force_login(UserFactory())
    return client


def start(client) -> dict:
    response = client.post(START, headers=JSON)
    assert response.status_code == 200, response.content
    return response.json()


def state_of(started: dict) -> str:
    """The login's OAuth state, which the operator's CODE#STATE must carry. Taken from the
    $BROWSER link (compat §11 L4): the printed link has it in 2.1.328 only."""
    [alternative] = started["alternatives"]
    return parse_qs(urlsplit(alternative["url"]).query)["state"][0]


def no_children_left(spawned) -> None:
    assert leftovers(spawned.procs) == []


def test_the_code_paste_url_is_captured_and_shown(client, provider, spawned):
    response = client.post(START, headers=HX)
    assert response.status_code == 200
    html = response.content.decode().replace("&amp;", "&")
    [url] = re.findall(r'class="auth-url" href="([^"]+)"', html)
    assert f'data-copy="{url}"' in html and 'name="code"' in html
    # compat §11: $BROWSER got the localhost-redirect URL, same state; shown as the alternative.
    [local] = re.findall(r'<details class="auth-alternative">.*?<a href="([^"]+)"', html, re.S)
    local_query = parse_qs(urlsplit(local).query)
    port = urlsplit(local_query["redirect_uri"][0]).port
    assert local_query["redirect_uri"] == [f"http://localhost:{port}/callback"]
    # compat §11 L3: the printed link is the code-paste flow of this very login.
    shape = printed_link_shape(url, local)
    assert shape is not None, f"drift: the printed sign-in link has a shape lab has not seen: {url}"
    assert f"ssh -L {port}:localhost:{port}" in html
    assert spawned.procs[0].poll() is None  # waiting on stdin for the code


def test_the_code_reaches_the_cli_and_the_status_flips(client, provider, spawned, proxy):
    assert client.get(STATUS, headers=JSON).json()["status"]["logged_in"] is False
    started = start(client)
    login = auth._pending.logins[provider.id]
    response = client.post(CODE, {"code": f"fake-code-123#{state_of(started)}"}, headers=HX)
    assert response.status_code == 200, response.content
    assert f"Logged in as <strong>{EMAIL}</strong>" in response.content.decode()
    # compat §11: CODE#STATE is split; the code goes to the token endpoint with the state.
    [token] = proxy.token_requests()
    assert token.body["grant_type"] == "authorization_code"
    assert token.body["code"] == "fake-code-123"
    assert token.body["state"] == state_of(started)
    # compat §11: the prompt has no newline, so the success line arrives glued to it (stdout).
    stdout = [line for stream, line in _drain(login) if stream == "stdout"]
    assert "Paste code here if prompted > Login successful." in stdout
    assert login.proc.returncode == 0
    status = client.get(STATUS, headers=JSON).json()["status"]
    assert status == {"logged_in": True, "account": EMAIL, "method": "claude.ai"}
    assert (provider.home() / ".claude" / ".credentials.json").exists()
    no_children_left(spawned)


def test_a_refused_code_gives_the_clis_reason(client, provider, spawned, proxy):
    proxy.behaviour.token_status = 400  # invalid_grant
    started = start(client)
    response = client.post(CODE, {"code": f"stale#{state_of(started)}"}, headers=JSON)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_code"
    # compat §11: the CLI's own words, on stderr after `Couldn't log in: `.
    assert response.json()["message"].startswith("That code wasn't accepted. It may be incomplete, expired")
    assert client.get(STATUS, headers=JSON).json()["status"]["logged_in"] is False
    no_children_left(spawned)


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ("closed-proxy", r"connect ECONNREFUSED 127\.0\.0\.1:\d+"),
        ("connect-refused", r"proxy refused the connection"),
    ],
    ids=["proxy-port-closed", "connect-refused"],
)
def test_an_unreachable_sign_in_server_gives_a_clear_message(
    client, provider, spawned, proxy, settings, setup, reason
):
    if setup == "closed-proxy":
        dead = f"http://127.0.0.1:{closed_port()}"
        settings.LAB_LOGIN_EXTRA_ENV = {
            **settings.LAB_LOGIN_EXTRA_ENV,
            "HTTPS_PROXY": dead,
            "https_proxy": dead,
        }
    else:
        proxy.behaviour.refuse_connect = True
    started = start(client)
    response = client.post(CODE, {"code": f"abc#{state_of(started)}"}, headers=HX)
    assert response.status_code == 502
    html = response.content.decode()
    assert re.search(rf'role="alert">Claude Code could not log in: {reason}</p>', html), html
    assert response["hx-retarget"] == "#auth-card-claude-code"
    no_children_left(spawned)


def test_a_login_left_waiting_times_out(client, provider, spawned, monkeypatch):
    monkeypatch.setattr(auth, "PENDING_TTL_S", 1.0)
    started = start(client)
    login = auth._pending.logins[provider.id]
    proc = spawned.procs[0]
    proc.wait(timeout=15)  # killed by the watcher: it holds the lock from the expiry to the reap
    with auth._pending.locked(provider.id):
        assert login.state == "expired" and login.reaped
    no_children_left(spawned)
    response = client.post(CODE, {"code": f"abc#{state_of(started)}"}, headers=JSON)
    assert response.status_code == 504
    assert response.json()["error"] == "login_timeout"


def test_logout_after_a_login(client, provider, spawned):
    started = start(client)
    assert client.post(CODE, {"code": f"c#{state_of(started)}"}).status_code == 200
    response = client.post(LOGOUT, headers=HX)
    assert response.status_code == 200
    assert "Not logged in" in response.content.decode()
    assert not (provider.home() / ".claude" / ".credentials.json").exists()  # compat §11
    assert client.get(STATUS, headers=JSON).json()["status"]["logged_in"] is False
    no_children_left(spawned)


def test_logout_kills_a_pending_login(client, provider, spawned):
    start(client)
    assert spawned.procs[0].poll() is None
    assert client.post(LOGOUT, headers=JSON).status_code == 200
    no_children_left(spawned)


def test_a_second_start_kills_the_first(client, provider, spawned):
    first_start = start(client)
    second_start = start(client)
    first, second = spawned.procs
    assert first.returncode is not None and leftovers([first]) == []
    assert second.poll() is None
    assert state_of(first_start) != state_of(second_start)
    response = client.post(CODE, {"code": f"c#{state_of(second_start)}"}, headers=JSON)
    assert response.json()["status"]["logged_in"] is True
    no_children_left(spawned)


def test_browser_is_one_program_path_not_split(provider, tmp_path):
    """compat §11: why auth.py generates a wrapper instead of `BROWSER="python script file"`."""
    capture = tmp_path / "captured"
    wrapper = auth.write_browser_wrapper(tmp_path, capture)
    env = {**auth._env(provider), "BROWSER": f"{wrapper} extra-arg"}
    proc = auth._spawn([provider.binary(), "auth", "login"], env)
    try:
        assert proc.stdout is not None
        # The visit mark is printed right after the CLI ran $BROWSER (it would have by now).
        for raw in iter(proc.stdout.readline, b""):
            if auth.VISIT_MARK in raw.decode():
                break
        else:
            pytest.fail("the CLI exited without printing the visit mark")
        time.sleep(auth.BROWSER_GRACE_S)
        assert not capture.exists()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert leftovers([proc]) == []


def test_auth_status_is_json_with_rc_1_when_logged_out(provider):
    done = subprocess.run(
        [provider.binary(), "auth", "status"], env=auth._env(provider), capture_output=True, timeout=30
    )
    assert done.returncode == 1  # compat §11
    assert auth.parse_status(done.returncode, done.stdout).logged_in is False
    assert b'"loggedIn": false' in done.stdout and b'"authMethod": "none"' in done.stdout


def _drain(login):
    lines = []
    while not login.lines.empty():
        stream, line = login.lines.get_nowait()
        if line is not None:
            lines.append((stream, line))
    return lines
