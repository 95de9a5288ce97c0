"""providers.claude_code.auth against a stand-in `claude` that prints the compat §11 lines.

Fast and deterministic: timeouts, reaping and one-login-at-a-time. The real binary is driven by
compat/claude_code/tests/test_live_login.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compat.login_proxy import SpawnRecorder, leftovers
from providers.claude_code import auth, browser_capture
from providers.claude_code.provider import ClaudeCodeProvider
from providers.errors import InvalidCode, LoginFailed, LoginTimeout

CODE_URL = (
    "https://claude.com/cai/oauth/authorize?code=true&client_id=c&response_type=code"
    "&redirect_uri=https%3A%2F%2Fplatform.claude.com%2Foauth%2Fcode%2Fcallback&state=S"
)
LOCAL_URL = (
    "https://claude.com/cai/oauth/authorize?code=true&client_id=c&response_type=code"
    "&redirect_uri=http%3A%2F%2Flocalhost%3A4321%2Fcallback&state=S"
)
# 2.1.332 prints a short code-paste link (its query is the PKCE challenge), on the next line.
SHORT_URL = "https://claude.ai/oauth/authorize?z-Grg7n4NOqNp8U0sWmX8hprTkHV38Pg2pTqm42V2_J8Y"

# A stand-in for `claude auth ...`; FAKE_MODE picks the behaviour. The lines are compat §11's.
FAKE_CLI = f"""#!{sys.executable}
import json, os, subprocess, sys, time
mode = os.environ.get("FAKE_MODE", "ok")
flag = os.path.join(os.environ["HOME"], "fake-logged-in")
verb = sys.argv[1:3]
if verb == ["auth", "status"]:
    if mode == "status-hang":
        time.sleep(60)
    logged = os.path.exists(flag)
    print(json.dumps({{"loggedIn": logged, "authMethod": "claude.ai" if logged else "none",
                      "email": "op@example.invalid" if logged else None,
                      "orgName": "Org" if logged else None}}))
    sys.exit(0 if logged else 1)
if verb == ["auth", "logout"]:
    if os.path.exists(flag):
        os.remove(flag)
    print("Logged out on this computer.")
    sys.exit(0)
if mode == "silent":
    time.sleep(60)
if mode == "crash":
    print("something broke", file=sys.stderr)
    sys.exit(3)
print("Opening browser to sign in\\u2026", flush=True)
if mode != "no-browser":
    subprocess.run([os.environ["BROWSER"], {LOCAL_URL!r}])
if mode == "next-line":  # 2.1.332: the mark ends its line, the (short) link is on the next
    print("If the browser didn't open, visit:", flush=True)
    time.sleep(0.2)
    print({SHORT_URL!r}, flush=True)
elif mode == "blank-then-link":
    print("If the browser didn't open, visit:", flush=True)
    print("", flush=True)
    print("  " + {SHORT_URL!r}, flush=True)
elif mode == "next-line-junk":
    print("If the browser didn't open, visit:", flush=True)
    print("javascript:alert(1)", flush=True)
else:
    print("If the browser didn't open, visit: " + {CODE_URL!r}, flush=True)
sys.stdout.write("Paste code here if prompted > ")
sys.stdout.flush()
line = sys.stdin.readline()
with open(os.path.join(os.environ["HOME"], "received"), "w") as f:
    f.write(line)
if mode == "hang":
    time.sleep(60)
if line.split("#")[0] == "good":
    open(flag, "w").close()
    print("Login successful.")
    sys.exit(0)
if line.split("#")[0] == "offline":
    print("Couldn't log in: getaddrinfo ENOTFOUND platform.claude.com", file=sys.stderr)
    sys.exit(1)
print("Couldn't log in: That code wasn't accepted. It may be incomplete, expired, already used, "
      "or from an earlier sign-in attempt. Sign in again to get a new code.", file=sys.stderr)
sys.exit(1)
"""


@pytest.fixture
def provider(tmp_path, settings, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "claude"
    cli.write_text(FAKE_CLI)
    cli.chmod(0o755)
    settings.LAB_AGENT_BIN_DIR = str(bin_dir)
    settings.LAB_AGENT_HOME = str(tmp_path / "home")
    (tmp_path / "home").mkdir()
    settings.LAB_LOGIN_EXTRA_ENV = {"FAKE_MODE": "ok"}
    return ClaudeCodeProvider()


@pytest.fixture
def spawned(monkeypatch):
    recorder = SpawnRecorder(auth._spawn)
    monkeypatch.setattr(auth, "_spawn", recorder)
    yield recorder
    auth._pending.reap_all()
    assert leftovers(recorder.procs) == []


def mode(settings, name):
    settings.LAB_LOGIN_EXTRA_ENV = {"FAKE_MODE": name}


def received(provider):
    return (provider.home() / "received").read_text()


# --- the login ---------------------------------------------------------------------------------


def test_start_returns_the_code_paste_url_and_the_localhost_alternative(provider, spawned):
    start = auth.login_start(provider)
    assert start.url == CODE_URL
    [(instructions, url)] = start.alternatives
    assert url == LOCAL_URL
    assert "ssh -L 4321:localhost:4321" in instructions
    assert spawned.procs[0].poll() is None  # it waits for the code


@pytest.mark.parametrize("layout", ["next-line", "blank-then-link"])
def test_the_link_is_found_on_whichever_line_follows_the_mark(provider, spawned, settings, layout):
    # compat §11: 2.1.328 prints the link after the mark on its line, 2.1.332 on the next line.
    mode(settings, layout)
    start = auth.login_start(provider)
    assert start.url == SHORT_URL
    [(_, url)] = start.alternatives
    assert url == LOCAL_URL


def test_a_line_after_the_mark_that_is_not_a_link_is_refused(provider, spawned, settings):
    mode(settings, "next-line-junk")
    with pytest.raises(LoginFailed, match="does not recognise"):
        auth.login_start(provider)


def test_without_a_browser_url_there_is_no_alternative(provider, spawned, settings, monkeypatch):
    monkeypatch.setattr(auth, "BROWSER_GRACE_S", 0.1)
    mode(settings, "no-browser")
    assert auth.login_start(provider).alternatives == ()


def test_a_good_code_logs_in(provider, spawned):
    auth.login_start(provider)
    status = auth.login_code(provider, " good#S\n")
    assert status.logged_in and status.account == "op@example.invalid" and status.method == "claude.ai"
    assert received(provider) == "good#S\n"  # stripped, one line, on stdin
    assert leftovers(spawned.procs) == []
    assert provider.id not in auth._pending.logins


def test_a_refused_code_is_invalid_code_with_the_clis_reason(provider, spawned):
    auth.login_start(provider)
    with pytest.raises(InvalidCode, match="That code wasn't accepted"):
        auth.login_code(provider, "bad#S")
    assert leftovers(spawned.procs) == []


def test_a_code_is_used_once(provider, spawned):
    auth.login_start(provider)
    with pytest.raises(InvalidCode):
        auth.login_code(provider, "bad#S")
    with pytest.raises(InvalidCode, match="No login is waiting"):
        auth.login_code(provider, "good#S")
    assert len(spawned.procs) == 1


def test_other_failures_are_login_failed_with_the_reason(provider, spawned):
    auth.login_start(provider)
    with pytest.raises(LoginFailed, match="Claude Code could not log in: getaddrinfo ENOTFOUND"):
        auth.login_code(provider, "offline#S")


def test_a_code_with_no_pending_login_is_refused(provider, spawned):
    with pytest.raises(InvalidCode, match="No login is waiting"):
        auth.login_code(provider, "good#S")
    assert spawned.procs == []


def test_a_malformed_code_is_refused_and_the_login_keeps_waiting(provider, spawned):
    auth.login_start(provider)
    with pytest.raises(InvalidCode) as caught:
        auth.login_code(provider, "good#S; rm -rf /")
    assert "rm -rf" not in str(caught.value)  # never echoed
    assert spawned.procs[0].poll() is None
    assert auth.login_code(provider, "good#S").logged_in


def test_a_new_start_kills_the_pending_one(provider, spawned):
    auth.login_start(provider)
    auth.login_start(provider)
    first, second = spawned.procs
    assert first.returncode is not None and leftovers([first]) == []
    assert second.poll() is None
    assert auth.login_code(provider, "good#S").logged_in


def test_logout_kills_the_pending_login(provider, spawned):
    auth.login_start(provider)
    status = auth.logout(provider)
    assert not status.logged_in
    assert leftovers(spawned.procs) == []
    with pytest.raises(InvalidCode):
        auth.login_code(provider, "good#S")


def test_logout_after_login(provider, spawned):
    auth.login_start(provider)
    auth.login_code(provider, "good#S")
    assert auth.auth_status(provider).logged_in
    assert not auth.logout(provider).logged_in


# --- timeouts and failures -------------------------------------------------------------------


def test_no_url_in_time_is_login_timeout(provider, spawned, settings, monkeypatch):
    monkeypatch.setattr(auth, "URL_TIMEOUT_S", 0.5)
    mode(settings, "silent")
    with pytest.raises(LoginTimeout, match="no sign-in link"):
        auth.login_start(provider)
    assert leftovers(spawned.procs) == []


def test_a_cli_that_dies_before_the_url_is_login_failed(provider, spawned, settings):
    mode(settings, "crash")
    with pytest.raises(LoginFailed, match="something broke"):
        auth.login_start(provider)
    assert leftovers(spawned.procs) == []


def test_no_answer_after_the_code_is_login_timeout(provider, spawned, settings, monkeypatch):
    monkeypatch.setattr(auth, "RESULT_TIMEOUT_S", 0.5)
    mode(settings, "hang")
    auth.login_start(provider)
    with pytest.raises(LoginTimeout, match="did not answer"):
        auth.login_code(provider, "good#S")
    assert leftovers(spawned.procs) == []


def test_a_login_nobody_finishes_is_reaped(provider, spawned, monkeypatch):
    monkeypatch.setattr(auth, "PENDING_TTL_S", 0.3)
    auth.login_start(provider)
    deadline = time.monotonic() + 10
    while spawned.procs[0].returncode is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # the watcher finishes the reap under the lock
    assert leftovers(spawned.procs) == []
    with pytest.raises(LoginTimeout, match="waited more than"):
        auth.login_code(provider, "good#S")
    with pytest.raises(InvalidCode):  # and that was its last word
        auth.login_code(provider, "good#S")


def test_a_missing_binary_is_login_failed(provider, settings, tmp_path):
    settings.LAB_AGENT_BIN_DIR = str(tmp_path / "nowhere")
    with pytest.raises(LoginFailed, match="could not be started"):
        auth.login_start(provider)
    assert not auth.auth_status(provider).logged_in


def test_a_status_that_hangs_is_bounded(provider, settings, monkeypatch):
    monkeypatch.setattr(auth, "STATUS_TIMEOUT_S", 0.5)
    mode(settings, "status-hang")
    status = auth.auth_status(provider)
    assert not status.logged_in and "did not come" in status.detail


def test_the_temp_dir_is_private_and_removed(provider, spawned):
    auth.login_start(provider)
    workdir = auth._pending.logins[provider.id].workdir
    assert workdir.stat().st_mode & 0o777 == 0o700
    assert (workdir / "browser").stat().st_mode & 0o777 == 0o700
    auth.logout(provider)
    assert not workdir.exists()


# --- pure parts --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    ["", " ", "a b", "a\nb", "a\rb", "a\tb", "a\x00b", "a\x1bb", "é", "a/b", "a+b", "x" * 513],
)
def test_validate_code_refuses(code):
    with pytest.raises(InvalidCode):
        auth.validate_code(code)


@pytest.mark.parametrize("code", ["abc", "A-b_c.d~e#f", "x" * 512, " abc\n"])
def test_validate_code_accepts(code):
    assert auth.validate_code(code) == code.strip()


def test_parse_status_account_login():
    # compat §11, after an account login (abridged).
    out = {
        "loggedIn": True,
        "authMethod": "claude.ai",
        "email": "a@b.c",
        "orgName": "Org",
        "planTier": "max_20x",
    }
    status = auth.parse_status(0, json.dumps(out).encode())
    assert (status.logged_in, status.method, status.account, status.detail) == (
        True,
        "claude.ai",
        "a@b.c",
        "Org",
    )


def test_parse_status_logged_out():
    out = {"loggedIn": False, "authMethod": "none", "loginExpiresAt": None}
    status = auth.parse_status(1, json.dumps(out).encode())
    assert (status.logged_in, status.method, status.account) == (False, "", "")


def test_parse_status_api_key():
    out = {"loggedIn": True, "authMethod": "api_key", "apiKeySource": "ANTHROPIC_API_KEY"}
    status = auth.parse_status(0, json.dumps(out).encode())
    assert (
        status.logged_in and status.method == "api_key" and status.detail == "API key from ANTHROPIC_API_KEY"
    )
    # compat §11 (L14): the CLI only reports the key it finds; nothing has tried it.
    assert status.verified is False
    # lab's login and logout cannot change a key from the environment: the card offers neither.
    assert status.external == "ANTHROPIC_API_KEY in the agent's environment"


def test_parse_status_a_login_managed_key_is_the_logins_own():
    out = {"loggedIn": True, "authMethod": "api_key", "apiKeySource": "/login managed key"}
    assert auth.parse_status(0, json.dumps(out).encode()).external == ""


def test_parse_status_account_login_is_verified():
    out = {"loggedIn": True, "authMethod": "claude.ai", "email": "op@example.com"}
    assert auth.parse_status(0, json.dumps(out).encode()).verified is True


@pytest.mark.parametrize("stdout", [b"", b"not json", b"[]"])
def test_parse_status_unreadable(stdout):
    assert not auth.parse_status(0, stdout).logged_in


def test_localhost_port():
    assert auth.localhost_port(LOCAL_URL) == 4321
    assert auth.localhost_port(CODE_URL) is None
    assert auth.localhost_port("https://x/?redirect_uri=http%3A%2F%2Fevil.example%3A80%2F") is None


def test_the_browser_wrapper_records_the_url_and_opens_nothing(tmp_path):
    capture = tmp_path / "captured"
    wrapper = auth.write_browser_wrapper(tmp_path, capture)
    done = subprocess.run([str(wrapper), LOCAL_URL], capture_output=True, timeout=10, env={})
    assert done.returncode == 0
    assert capture.read_text() == LOCAL_URL + "\n"
    assert capture.stat().st_mode & 0o777 == 0o600


def test_browser_capture_drops_multi_line_arguments(tmp_path):
    capture = tmp_path / "captured"
    assert (
        browser_capture.main(["browser_capture.py", str(capture), "https://a\nhttps://b", "https://c"]) == 0
    )
    assert capture.read_text() == "https://c\n"


def test_a_code_is_never_in_argv(provider, spawned):
    auth.login_start(provider)
    auth.login_code(provider, "good#S")
    assert all("good" not in " ".join(map(str, p.args)) for p in spawned.procs)
    assert os.environ.get("FAKE_MODE") is None  # the extra env reaches only the child
    assert Path(spawned.procs[0].args[0]).name == "claude"
