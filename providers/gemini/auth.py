"""Gemini's login (compat/gemini/COMPAT.md §10): Google sign-in's code-paste flow, or an API key
in the agent's environment.

Sign-in: the CLI has no login subcommand; its interactive start does the sign-in when the auth
method is "oauth-personal" and no browser can be opened (NO_BROWSER). It needs a terminal, so lab
runs it on a pseudo-terminal in a private, throwaway home (GEMINI_CLI_HOME) and reads its output
as a byte stream, never a screen: it prints the authorize URL and reads "Enter the authorization
code: "; the code goes in as one line. A refused code prints the CLI's reason (it would then ask
again with a new URL: lab ends the login instead, one code per login). An accepted code makes the
CLI write oauth_creds.json and google_accounts.json in that home; lab then moves both into the
agent's `.gemini/` and selects "oauth-personal" in its settings, the method runs then use.

The status reads what the CLI wrote (no process); logout removes it and the selection.
A key in the agent's environment is never `verified`: finding it proves nothing about Google
accepting it. The code is never logged, never put in argv or in a message.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings

from providers.errors import InvalidCode, LoginFailed, LoginTimeout
from providers.gemini.seed import SETTINGS, config_lock, read_json
from providers.pending import PendingLogin, PendingLogins, checked_code
from providers.safefile import read_regular, write_private
from providers.schema import AuthStatus, LoginStart

API_KEY_NAME = "GEMINI_API_KEY"
GOOGLE = "oauth-personal"  # §10: the settings' auth method for Google sign-in
CREDS = "oauth_creds.json"
ACCOUNTS = "google_accounts.json"


class Agent(Protocol):
    id: str

    def display_name(self) -> str: ...

    def binary(self) -> str: ...

    def agent_env(self) -> dict[str, str]: ...

    def gemini_dir(self) -> Path: ...


URL_TIMEOUT_S = 30.0  # until the prompt for the code (about 1.5 s observed)
RESULT_TIMEOUT_S = 60.0  # token exchange, then the account's email
ACCOUNT_GRACE_S = 10.0  # the email is cached just after the credentials
PENDING_TTL_S = 600.0
KILL_GRACE_S = 3.0
MAX_OUTPUT = 256 * 1024
MAX_FILE = 64 * 1024
MAX_URL = 8192
MAX_CODE = 512
# Google's authorization codes look like 4/0Ab...: URL-safe characters and '/'.
CODE_RE = re.compile(r"[A-Za-z0-9_\-/.~]+")
ANSI_RE = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

# §10 output, verified by compat/gemini/tests/test_live_login.py.
URL_MARK = "Please visit the following URL to authorize the application:"
PROMPT = "Enter the authorization code: "
FAILURE_MARK = "Failed to authenticate with authorization code:"
URL_PREFIX = "https://accounts.google.com/"
REFUSED_CODE = "invalid_grant"  # the token endpoint's error for a wrong or used code

DETAIL_GOOGLE = "Signed in with Google; every run starts by checking the stored credentials with Google"


# --- status ----------------------------------------------------------------------------------


def _read_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_regular(path, MAX_FILE) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _has_token(creds: dict[str, Any]) -> bool:
    return bool(creds.get("refresh_token") or creds.get("access_token"))


def selected_type(gemini_dir: Path) -> str:
    auth = _read_file(gemini_dir / SETTINGS).get("security", {})
    auth = auth.get("auth", {}) if isinstance(auth, dict) else {}
    return str(auth.get("selectedType") or "") if isinstance(auth, dict) else ""


def auth_status(provider: Agent) -> AuthStatus:
    gemini_dir = provider.gemini_dir()
    if selected_type(gemini_dir) == GOOGLE:
        creds = _read_file(gemini_dir / CREDS)
        if not _has_token(creds):
            return AuthStatus(
                logged_in=False,
                method=GOOGLE,
                detail="Google sign-in is selected, but no stored Google credentials were found.",
            )
        active = _read_file(gemini_dir / ACCOUNTS).get("active")
        return AuthStatus(
            logged_in=True,
            method=GOOGLE,
            account=active if isinstance(active, str) else "",
            # Read from the files only: whether Google still takes them shows when a run starts
            # (a refused one makes the run's CLI ask for a new code in its Terminal, §10).
            detail=DETAIL_GOOGLE,
        )
    if provider.agent_env().get(API_KEY_NAME):
        return AuthStatus(
            logged_in=True,
            method="api-key",
            detail=f"{API_KEY_NAME} is set in the agent's environment.",
            verified=False,
        )
    return AuthStatus(logged_in=False, detail=f"{API_KEY_NAME} is not set in the agent's environment.")


# --- the pending login -----------------------------------------------------------------------


@dataclass
class _Login(PendingLogin):
    master: int = -1  # lab's end of the CLI's pseudo-terminal
    output: bytearray = field(default_factory=bytearray)
    changed: threading.Condition = field(default_factory=threading.Condition)
    closed: bool = False  # the terminal reached EOF: the CLI is gone
    reader: threading.Thread | None = None

    def close_io(self) -> None:
        # The reader ends on EIO once nothing holds the terminal; the master is closed after it.
        if self.reader is not None:
            self.reader.join(timeout=KILL_GRACE_S)
        with contextlib.suppress(OSError):
            os.close(self.master)

    @property
    def home(self) -> Path:
        return self.workdir / "home"

    def text(self, start: int = 0) -> str:
        with self.changed:
            raw = bytes(self.output[start:])
        return ANSI_RE.sub(b"", raw).decode("utf-8", "replace").replace("\r", "")


_pending: PendingLogins[_Login] = PendingLogins(lambda: PENDING_TTL_S)


def login_start(provider: Agent) -> LoginStart:
    return LoginStart(url=_pending.start(provider.id, lambda: _launch(provider), _read_url))


def login_code(provider: Agent, code: str) -> AuthStatus:
    code = validate_code(code)
    with _pending.locked(provider.id):
        login = _pending.claim(provider.id)
        mark = len(login.output)
        try:
            # The code goes to the terminal only: never argv, never a log line.
            os.write(login.master, code.encode() + b"\r")
        except OSError:
            _pending.logins.pop(provider.id, None)
            _pending.reap(login)
            raise LoginFailed(
                "The login command stopped before it took the code. Start a new login."
            ) from None
    try:
        return _finish(provider, login, mark)
    finally:
        _pending.finish(provider.id, login)


def login_with_api_key(provider: Agent, key: str) -> AuthStatus:
    raise LoginFailed(
        f"lab does not store {provider.display_name()}'s key: set {API_KEY_NAME} in lab's agent "
        "environment (LAB_AGENT_ENV)."
    )


def logout(provider: Agent) -> AuthStatus:
    with _pending.locked(provider.id):
        _pending.discard(provider.id)
    gemini_dir = provider.gemini_dir()
    with config_lock(gemini_dir):
        signed_in = (gemini_dir / CREDS).exists()
        (gemini_dir / CREDS).unlink(missing_ok=True)
        accounts = _read_file(gemini_dir / ACCOUNTS)
        if accounts.get("active"):
            # As the CLI's own sign-out: the account moves to "old", none is active.
            old = [a for a in accounts.get("old") or [] if isinstance(a, str)]
            accounts = {"active": None, "old": [*old, accounts["active"]]}
            write_private(gemini_dir / ACCOUNTS, json.dumps(accounts, indent=2).encode())
        path = gemini_dir / SETTINGS
        current = read_json(path)
        security = current.get("security")
        auth = security.get("auth") if isinstance(security, dict) else None
        if isinstance(auth, dict) and auth.get("selectedType") == GOOGLE:
            # The next run's settings fall back to the API key (seed.install_settings).
            signed_in = True
            del auth["selectedType"]
            write_private(path, json.dumps(current, indent=2).encode())
    status = auth_status(provider)
    if status.logged_in and status.method == GOOGLE:
        raise LoginFailed(
            f"Logging out of {provider.display_name()} failed: its credentials are still there."
        )
    if status.logged_in:
        done = "Signed out of Google, but " if signed_in else ""
        raise LoginFailed(
            f"{done}{provider.display_name()} still runs with {API_KEY_NAME} from lab's agent "
            "environment: remove it from LAB_AGENT_ENV to log out."
        )
    return status


def validate_code(code: str) -> str:
    return checked_code(code, pattern=CODE_RE, allowed="- _ / . ~", max_chars=MAX_CODE)


# --- process plumbing ------------------------------------------------------------------------


def login_settings() -> dict[str, Any]:
    """The throwaway home's settings: Google sign-in, nothing sent but the sign-in's own calls."""
    return {
        "security": {"auth": {"selectedType": GOOGLE}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }


def _env(provider: Agent, home: Path) -> dict[str, str]:
    env = provider.agent_env()
    env.pop(API_KEY_NAME, None)
    env.update(
        {
            "HOME": str(home),
            "GEMINI_CLI_HOME": str(home),
            "NO_BROWSER": "true",  # §10: the code-paste flow, never a browser on lab's machine
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
    )
    # Test-only: the live tests route the CLI to a local TLS proxy (HTTPS_PROXY,
    # NODE_EXTRA_CA_CERTS). Unset in production.
    env.update(getattr(settings, "LAB_LOGIN_EXTRA_ENV", {}) or {})
    return env


def _spawn(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.Popen[bytes], int]:
    # Its own session on a fresh pseudo-terminal: the CLI signs in only on a terminal, and the
    # whole group is killed together.
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return proc, master


def _launch(provider: Agent) -> _Login:
    workdir = Path(tempfile.mkdtemp(prefix="lab-login-"))  # mkdtemp: 0700
    home = workdir / "home"
    (home / ".gemini").mkdir(parents=True, mode=0o700)
    write_private(home / ".gemini" / SETTINGS, json.dumps(login_settings()).encode())
    try:
        proc, master = _spawn([provider.binary()], _env(provider, home), workdir)
    except OSError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise LoginFailed(f"The CLI could not be started: {exc.strerror or exc}.") from None
    login = _Login(proc=proc, master=master, workdir=workdir)
    login.reader = threading.Thread(target=_read_output, args=(login,), name="login-read", daemon=True)
    login.reader.start()
    return login


def _read_output(login: _Login) -> None:
    while True:
        try:
            data = os.read(login.master, 65536)
        except OSError:
            data = b""  # EIO: every process on the terminal has gone
        with login.changed:
            if not data:
                login.closed = True
                login.changed.notify_all()
                return
            if len(login.output) < MAX_OUTPUT:
                login.output.extend(data)
            login.changed.notify_all()


def _wait_for(login: _Login, done: Any, timeout: float) -> Any:
    """Until done() returns something truthy, the terminal closes, or `timeout`."""
    deadline = time.monotonic() + timeout
    with login.changed:
        while True:
            result = done()
            if result or login.closed:
                return result
            left = deadline - time.monotonic()
            if left <= 0:
                return result
            login.changed.wait(min(left, 0.2))


def _read_url(login: _Login) -> str:
    def url() -> str | None:
        text = login.text()
        if PROMPT not in text or URL_MARK not in text:
            return None
        after = text.rsplit(URL_MARK, 1)[1].strip()
        return after.split("\n", 1)[0].strip() or None

    found = _wait_for(login, url, URL_TIMEOUT_S)
    if found:
        return _checked_url(found)
    if login.closed:
        raise LoginFailed(f"The CLI ended before it printed a sign-in link: {_tail(login.text())}")
    raise LoginTimeout(f"The CLI printed no sign-in link within {URL_TIMEOUT_S:.0f} s.")


def _checked_url(url: str) -> str:
    # Rendered as a link: only Google's https sign-in page, never javascript: or a second line.
    if not url.startswith(URL_PREFIX) or len(url) > MAX_URL or any(c.isspace() for c in url):
        raise LoginFailed("The CLI printed a sign-in link lab does not recognise.")
    return url


def _finish(provider: Agent, login: _Login, mark: int) -> AuthStatus:
    creds_path = login.home / ".gemini" / CREDS

    def outcome() -> str | None:
        if FAILURE_MARK in login.text(mark):
            return "refused"
        # Parsed, not just present: the CLI writes the file while it goes on to the user info.
        return "stored" if _has_token(_read_file(creds_path)) else None

    result = _wait_for(login, outcome, RESULT_TIMEOUT_S)
    if result == "refused":
        # The reason is the rest of the mark's own line; it may be empty (a refused CONNECT).
        reason = login.text(mark).split(FAILURE_MARK, 1)[1].split("\n", 1)[0].strip()[:300]
        if reason == REFUSED_CODE:
            raise InvalidCode(
                f"The sign-in server refused that code ({reason}). Start a new login for a fresh link."
            )
        if not reason:
            raise LoginFailed(
                f"{provider.display_name()} could not exchange the code and printed no reason "
                "(the sign-in server may be unreachable). Start a new login."
            )
        raise LoginFailed(f"{provider.display_name()} could not log in: {reason}")
    if result != "stored":
        if login.closed:
            raise LoginFailed(f"{provider.display_name()} could not log in: {_tail(login.text(mark))}")
        raise LoginTimeout(
            f"The sign-in server did not answer within {RESULT_TIMEOUT_S:.0f} s. Start a new login."
        )
    accounts_path = login.home / ".gemini" / ACCOUNTS
    _wait_for(login, lambda: _read_file(accounts_path).get("active"), ACCOUNT_GRACE_S)
    _install(provider, login)
    status = auth_status(provider)
    if not status.logged_in:
        raise LoginFailed("The CLI accepted the code, but lab could not find the credentials it stored.")
    return status


def _install(provider: Agent, login: _Login) -> None:
    """The credentials the CLI wrote move into the agent's home, with Google selected there."""
    gemini_dir = provider.gemini_dir()
    source = login.home / ".gemini"
    with config_lock(gemini_dir):
        for name in (CREDS, ACCOUNTS):
            with contextlib.suppress(FileNotFoundError):
                write_private(gemini_dir / name, read_regular(source / name, MAX_FILE))
        path = gemini_dir / SETTINGS
        current = read_json(path)
        security = current.setdefault("security", {})
        auth = security.setdefault("auth", {}) if isinstance(security, dict) else None
        if not isinstance(auth, dict):
            raise LoginFailed(f"lab will not edit {path}: its security settings are not an object.")
        auth["selectedType"] = GOOGLE
        write_private(path, json.dumps(current, indent=2).encode())


def _tail(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "it printed no reason"
