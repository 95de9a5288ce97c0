"""Live: Google sign-in's code-paste flow of the real Gemini CLI (the pinned version), fully
offline, through lab's login routes.

COMPAT §10: the CLI honours HTTPS_PROXY and NODE_EXTRA_CA_CERTS, so a local CONNECT proxy with a
throwaway CA (compat/gemini/login_proxy.py) plays Google's token, user-info and Code Assist
servers, and the sign-in runs for real up to the CLI's prompt. The agent home is private to
each test; every test ends with no login child left.
"""

from __future__ import annotations

import json
import re
import stat
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from compat.gemini.login_proxy import GOOD_CODE, GeminiLoginProxy, gemini_certs
from compat.login_proxy import closed_port, leftovers
from providers.gemini import auth
from providers.registry import _load, get_provider
from tests.factories import UserFactory

pytestmark = [pytest.mark.live, pytest.mark.django_db]

START = "/providers/gemini/auth/login/start"
CODE = "/providers/gemini/auth/login/code"
LOGOUT = "/providers/gemini/auth/logout"
STATUS = "/providers/gemini/auth/status"
JSON = {"accept": "application/json"}
HX = {"hx-request": "true"}
EMAIL = "operator@example.invalid"
REDIRECT = "https://codeassist.google.com/authcode"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return gemini_certs(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def proxy(certs):
    with GeminiLoginProxy(certs) as running:
        yield running


@pytest.fixture
def provider(proxy, settings, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    settings.LAB_AGENT_HOME = str(home)  # never the operator's HOME
    settings.LAB_AGENT_ENV = {}
    settings.LAB_PROVIDERS = {"gemini": "providers.gemini.GeminiProvider"}
    # Test-only login env: the CLI talks to the local proxy and trusts its CA.
    settings.LAB_LOGIN_EXTRA_ENV = proxy.env()
    _load.cache_clear()
    yield get_provider("gemini")
    _load.cache_clear()


@pytest.fixture
def spawned(monkeypatch):
    """Every login child lab starts; at teardown none of them, nor anything in its group, is left."""
    procs = []
    real = auth._spawn

    def recording(argv, env, cwd):
        proc, master = real(argv, env, cwd)
        procs.append(proc)
        return proc, master

    monkeypatch.setattr(auth, "_spawn", recording)
    yield procs
    auth._pending.reap_all()
    assert leftovers(procs) == []


@pytest.fixture
def client(client, db):
    client.force_login(UserFactory())
    return client


def start(client) -> dict:
    response = client.post(START, headers=JSON)
    assert response.status_code == 200, response.content
    return response.json()


def test_login_start_shows_googles_code_paste_link(client, provider, spawned, proxy):
    response = client.post(START, headers=HX)
    assert response.status_code == 200
    html = response.content.decode().replace("&amp;", "&")
    [url] = re.findall(r'class="auth-url" href="([^"]+)"', html)
    assert f'data-copy="{url}"' in html and 'name="code"' in html
    # COMPAT §10: Google's authorize page, redirecting to the code-paste page, with PKCE.
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert (parts.netloc, parts.path) == ("accounts.google.com", "/o/oauth2/v2/auth")
    assert query["redirect_uri"] == [REDIRECT]
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
    assert query["response_type"] == ["code"] and query["access_type"] == ["offline"]
    assert spawned[0].poll() is None  # waiting on its terminal for the code
    assert proxy.requests == []  # nothing asked of any server before the code


def test_a_wrong_code_gives_the_clis_error(client, provider, spawned, proxy):
    start(client)
    response = client.post(CODE, {"code": "4/0Ab-not-the-code"}, headers=JSON)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_code"
    # COMPAT §10: the CLI's own reason, the token endpoint's error, after its failure mark.
    assert response.json()["message"] == (
        "The sign-in server refused that code (invalid_grant). Start a new login for a fresh link."
    )
    [token] = proxy.token_requests()
    assert parse_qs(token.body)["code"] == ["4/0Ab-not-the-code"]
    assert client.get(STATUS, headers=JSON).json()["status"]["logged_in"] is False
    assert not (provider.gemini_dir() / auth.CREDS).exists()
    assert leftovers(spawned) == []


def test_the_right_code_logs_in_and_the_status_says_so(client, provider, spawned, proxy):
    assert client.get(STATUS, headers=JSON).json()["status"]["logged_in"] is False
    start(client)
    response = client.post(CODE, {"code": GOOD_CODE}, headers=HX)
    assert response.status_code == 200, response.content
    assert f"Logged in as <strong>{EMAIL}</strong> · {auth.DETAIL_GOOGLE}" in response.content.decode()
    # COMPAT §10: the code, the PKCE verifier and the code-paste redirect go to the token endpoint.
    [token] = proxy.token_requests()
    form = parse_qs(token.body)
    assert form["grant_type"] == ["authorization_code"] and form["code"] == [GOOD_CODE]
    assert form["redirect_uri"] == [REDIRECT] and form["code_verifier"][0]
    # What the CLI stored, now in the agent's home, private, with Google selected there.
    creds = provider.gemini_dir() / auth.CREDS
    assert json.loads(creds.read_text())["refresh_token"] == "1//lab-stand-in-refresh-token"
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
    assert auth.selected_type(provider.gemini_dir()) == auth.GOOGLE
    status = client.get(STATUS, headers=JSON).json()["status"]
    assert status == {"logged_in": True, "account": EMAIL, "method": auth.GOOGLE}
    assert leftovers(spawned) == []


def test_the_account_is_the_user_infos_email(client, provider, spawned, proxy):
    """COMPAT §10: after the credentials the CLI asks Google's user info for the account's email
    and caches it as the active account; the login waits for it."""
    start(client)
    assert client.post(CODE, {"code": GOOD_CODE}, headers=JSON).status_code == 200
    paths = [(r.host, r.path) for r in proxy.requests]
    assert ("www.googleapis.com", "/oauth2/v2/userinfo") in paths
    accounts = json.loads((provider.gemini_dir() / auth.ACCOUNTS).read_text())
    assert accounts["active"] == EMAIL
    assert leftovers(spawned) == []


def test_logout_after_a_login(client, provider, spawned):
    start(client)
    assert client.post(CODE, {"code": GOOD_CODE}, headers=JSON).status_code == 200
    response = client.post(LOGOUT, headers=HX)
    assert response.status_code == 200
    assert "Not logged in" in response.content.decode()
    assert not (provider.gemini_dir() / auth.CREDS).exists()
    assert json.loads((provider.gemini_dir() / auth.ACCOUNTS).read_text()) == {"active": None, "old": [EMAIL]}
    assert auth.selected_type(provider.gemini_dir()) == ""
    assert client.get(STATUS, headers=JSON).json()["status"]["logged_in"] is False
    assert leftovers(spawned) == []


def test_logout_kills_a_pending_login(client, provider, spawned):
    start(client)
    assert spawned[0].poll() is None
    assert client.post(LOGOUT, headers=JSON).status_code == 200
    assert leftovers(spawned) == []


def test_a_second_start_kills_the_first(client, provider, spawned):
    first_url = start(client)["url"]
    second_url = start(client)["url"]
    first, second = spawned
    assert first.returncode is not None and leftovers([first]) == []
    assert second.poll() is None
    assert first_url != second_url  # a fresh PKCE challenge and state
    response = client.post(CODE, {"code": GOOD_CODE}, headers=JSON)
    assert response.json()["status"]["logged_in"] is True


def test_a_run_after_the_sign_in_is_answered_through_code_assist(client, settings, proxy, gemini_rig):
    """COMPAT §10: a run started as run_start starts it, from the agent's home the sign-in wrote
    into, loads the stored credentials (no new code exchange) and sends its turn to Code Assist
    with the project loadCodeAssist gave; the stand-in's answer reaches the run's messages."""
    # The rig's home, with the scripted API key taken away: only the sign-in can answer.
    settings.LAB_AGENT_ENV = proxy.env()  # the agent's environment reaches the stand-in
    settings.LAB_LOGIN_EXTRA_ENV = proxy.env()
    settings.LAB_PROVIDERS = {"gemini": "providers.gemini.GeminiProvider"}
    _load.cache_clear()
    try:
        start(client)
        assert client.post(CODE, {"code": GOOD_CODE}, headers=JSON).json()["status"]["logged_in"] is True
        run = gemini_rig.start()
        run.provider.reply(run.handle, "say hello")
        run.wait(lambda r: r.answered(proxy.behaviour.answer), what="the stand-in's answer")
    finally:
        auth._pending.reap_all()
        _load.cache_clear()
    assert len(proxy.token_requests()) == 1  # the login's exchange only: the run used what it stored
    assert ("oauth2.googleapis.com", "/tokeninfo") in [(r.host, r.path) for r in proxy.requests]
    turns = [r for r in proxy.requests if r.path.startswith("/v1internal:streamGenerateContent")]
    assert turns and turns[-1].body["project"] == proxy.behaviour.project
    assert gemini_rig.model.requests == []  # nothing went to the API-key endpoint


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (
            "proxy-port-closed",
            r"Gemini CLI could not log in: request to https://oauth2\.googleapis\.com/token failed, "
            r"reason: connect ECONNREFUSED 127\.0\.0\.1:\d+",
        ),
        (
            "connect-refused",
            r"Gemini CLI could not exchange the code and printed no reason \(the sign-in server may be "
            r"unreachable\)\. Start a new login\.",
        ),
    ],
    ids=["proxy-port-closed", "connect-refused"],
)
def test_an_unreachable_sign_in_server_gives_the_clis_reason(
    client, provider, spawned, proxy, settings, setup, message
):
    if setup == "proxy-port-closed":
        dead = f"http://127.0.0.1:{closed_port()}"
        settings.LAB_LOGIN_EXTRA_ENV = {
            **settings.LAB_LOGIN_EXTRA_ENV,
            "HTTPS_PROXY": dead,
            "https_proxy": dead,
        }
    else:
        proxy.refuse_connect = True
    start(client)
    response = client.post(CODE, {"code": GOOD_CODE}, headers=JSON)
    assert response.status_code == 502
    # COMPAT §10 (G4): the rest of the failure mark's line is the CLI's reason; empty when the
    # proxy refuses the CONNECT.
    assert re.fullmatch(message, response.json()["message"]), response.json()["message"]
    assert client.get(STATUS, headers=JSON).json()["status"]["logged_in"] is False
    assert leftovers(spawned) == []


def test_a_login_left_waiting_times_out(client, provider, spawned, monkeypatch):
    monkeypatch.setattr(auth, "PENDING_TTL_S", 1.0)
    start(client)
    login = auth._pending.logins[provider.id]
    spawned[0].wait(timeout=15)  # killed by the watcher: it holds the lock from the expiry to the reap
    with auth._pending.locked(provider.id):
        assert login.state == "expired" and login.reaped
    assert leftovers(spawned) == []
    response = client.post(CODE, {"code": GOOD_CODE}, headers=JSON)
    assert response.status_code == 504
    assert response.json()["error"] == "login_timeout"


def test_a_run_whose_stored_sign_in_is_refused_asks_for_a_code_in_its_pane(settings, proxy, gemini_rig):
    """COMPAT §10: what the status cannot know. Stored credentials Google no longer takes (the
    refresh refused) make a run's CLI start the code-paste flow in its own pane, and wait there."""
    settings.LAB_AGENT_ENV = proxy.env()
    gemini_dir = gemini_rig.home / ".gemini"
    (gemini_dir / auth.CREDS).write_text(
        json.dumps(
            {"access_token": "ya29.old", "refresh_token": "1//old", "token_type": "Bearer", "expiry_date": 1}
        )
    )
    settings_file = gemini_dir / "settings.json"
    current = json.loads(settings_file.read_text())
    current["security"]["auth"]["selectedType"] = auth.GOOGLE
    settings_file.write_text(json.dumps(current))
    proxy.behaviour.good_code = "none: every code and refresh is refused"
    proxy.behaviour.refuse_refresh = True
    assert get_provider_status(gemini_rig) is True  # the files say signed in
    run = gemini_rig.start()
    deadline = time.monotonic() + 30
    while auth.PROMPT.strip() not in run.pane():  # a pane row loses its trailing space
        assert time.monotonic() < deadline, run.pane()
        time.sleep(0.2)
    assert auth.URL_MARK in run.pane()
    assert [parse_qs(r.body)["grant_type"] for r in proxy.token_requests()] == [["refresh_token"]]


def get_provider_status(rig) -> bool:
    return rig.provider().auth_status().logged_in
