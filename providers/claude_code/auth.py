"""Claude Code login through the CLI's own `claude auth` commands, never through a TUI pane.

compat §11 (pinned in compat/claude_code/COMPAT-login.md): `claude auth status` prints JSON (rc 1 when
logged out); `claude auth login`, run with pipes, prints the code-paste URL on one line, waits
for `CODE#STATE` on stdin, and ends with `Login successful.` (rc 0) or `Couldn't log in: <reason>`
(rc 1). It also runs $BROWSER with a second, localhost-redirect URL; lab's BROWSER records it.

One login at a time per provider. Its child is always reaped: a new start, a logout, a timeout
and process exit all end it. The code is never logged, never put in argv or in a message.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol
from urllib.parse import parse_qs, urlsplit

import orjson
from django.conf import settings

from providers.errors import InvalidCode, LoginFailed, LoginTimeout
from providers.pending import PendingLogin, PendingLogins, checked_code
from providers.schema import AuthStatus, LoginStart


class Agent(Protocol):
    """What the login needs of the provider: its id (one login at a time per id), its name for
    messages, and how to run its binary."""

    id: str

    def display_name(self) -> str: ...

    def binary(self) -> str: ...

    def agent_env(self) -> dict[str, str]: ...


STATUS_TIMEOUT_S = 15.0
LOGOUT_TIMEOUT_S = 30.0  # logout also asks the server to revoke the token
URL_TIMEOUT_S = 30.0  # until the code-paste URL is printed (about 1-4 s observed)
BROWSER_GRACE_S = 3.0  # the BROWSER URL may land just after the printed one
PENDING_TTL_S = 600.0  # how long a started login waits for its code
RESULT_TIMEOUT_S = 60.0  # token exchange and profile fetch after the code
KILL_GRACE_S = 3.0  # SIGTERM ends the CLI in ~0.1 s (rc 143); SIGKILL after this
MAX_LINE = 64 * 1024
MAX_URL = 8192
MAX_CODE = 512
CODE_RE = re.compile(r"[A-Za-z0-9_\-#.~]+")  # compat §11: CODE#STATE, both URL-safe base64

# compat §11 line formats (verified by compat/claude_code/tests/test_live_login.py). Success is rc 0,
# confirmed by `auth status`; the `Login successful.` line is pinned by the live test only.
# The link follows the mark on the same line (2.1.328) or on the next one (2.1.332): the first
# text after the mark, wherever it lands, is the link.
VISIT_MARK = "If the browser didn't open, visit:"
FAILURE_MARK = "Couldn't log in: "
REFUSED_CODE = "That code wasn't accepted"


# --- status ----------------------------------------------------------------------------------


def auth_status(provider: Agent) -> AuthStatus:
    try:
        done = subprocess.run(
            [provider.binary(), "auth", "status"],
            env=_env(provider),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=STATUS_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return AuthStatus(
            logged_in=False, detail=f"The login status did not come within {STATUS_TIMEOUT_S:.0f} s."
        )
    except OSError as exc:
        return AuthStatus(logged_in=False, detail=f"The CLI could not be run: {exc.strerror or exc}.")
    return parse_status(done.returncode, done.stdout)


def parse_status(returncode: int, stdout: bytes) -> AuthStatus:
    """compat §11: JSON on stdout; rc 0 logged in, rc 1 logged out."""
    try:
        data = orjson.loads(stdout)
    except orjson.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        return AuthStatus(logged_in=False, detail="The CLI's login status could not be read.")
    method = str(data.get("authMethod") or "")
    logged_in = data.get("loggedIn") is True and returncode == 0
    if method == "api_key":
        source = str(data.get("apiKeySource") or "")
        # compat §11 (L14): `auth status` only reports the key it finds; it never asks the
        # service, so the key is configured, not verified.
        # A key the CLI finds in its environment (or a key helper) outlives `auth logout` and
        # wins over an account login: lab's login and logout buttons would change nothing.
        external = ""
        if source and source != "/login managed key":
            external = f"{source} in the agent's environment" if source.isupper() else f"its {source} setting"
        return AuthStatus(
            logged_in=logged_in,
            method=method,
            detail=f"API key from {source}" if source else "API key",
            verified=False,
            external=external,
        )
    return AuthStatus(
        logged_in=logged_in,
        method="" if method == "none" else method,
        account=str(data.get("email") or "") if logged_in else "",
        detail=str(data.get("orgName") or "") if logged_in else "",
    )


# --- the pending login -----------------------------------------------------------------------


@dataclass
class _Login(PendingLogin):
    lines: queue.Queue[tuple[str, str | None]] = field(default_factory=queue.Queue)  # None: EOF
    readers: list[threading.Thread] = field(default_factory=list)

    @property
    def capture_file(self) -> Path:
        return self.workdir / "browser-url"

    def close_io(self) -> None:
        for reader in self.readers:
            reader.join(timeout=KILL_GRACE_S)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


_pending: PendingLogins[_Login] = PendingLogins(lambda: PENDING_TTL_S)


def login_start(provider: Agent) -> LoginStart:
    return _pending.start(provider.id, lambda: _launch(provider), _read_start)


def login_code(provider: Agent, code: str) -> AuthStatus:
    code = validate_code(code)
    with _pending.locked(provider.id):
        login = _pending.claim(provider.id)
        try:
            # The code goes to stdin only: never argv, never a log line (compat §11).
            assert login.proc.stdin is not None
            login.proc.stdin.write(code.encode() + b"\n")
            login.proc.stdin.flush()
        except OSError:
            _pending.logins.pop(provider.id, None)
            _pending.reap(login)
            raise LoginFailed(
                "The login command stopped before it took the code. Start a new login."
            ) from None
    try:
        returncode: int | None = login.proc.wait(timeout=RESULT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        returncode = None
    finally:
        _pending.finish(provider.id, login)
    if returncode is None:
        raise LoginTimeout(
            f"The sign-in server did not answer within {RESULT_TIMEOUT_S:.0f} s. Start a new login."
        )
    return _outcome(provider, login, returncode)


def logout(provider: Agent) -> AuthStatus:
    with _pending.locked(provider.id):
        _pending.discard(provider.id)
    try:
        done = subprocess.run(
            [provider.binary(), "auth", "logout"],
            env=_env(provider),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=LOGOUT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        done = None  # the status below says whether the local credentials are gone
    except OSError as exc:
        raise LoginFailed(f"The CLI could not be run: {exc.strerror or exc}.") from None
    status = auth_status(provider)
    if status.logged_in:
        reason = _tail(done.stderr if done else b"") or "it did not finish"
        raise LoginFailed(f"Logging out of {provider.display_name()} failed: {reason}")
    return status


def validate_code(code: str) -> str:
    return checked_code(code, pattern=CODE_RE, allowed="- _ # . ~", max_chars=MAX_CODE)


# --- process plumbing ------------------------------------------------------------------------


def _env(provider: Agent) -> dict[str, str]:
    env = provider.agent_env()
    # Test-only: the live tests route the CLI to a local TLS proxy (HTTPS_PROXY,
    # NODE_EXTRA_CA_CERTS). Unset in production.
    env.update(getattr(settings, "LAB_LOGIN_EXTRA_ENV", {}) or {})
    return env


def _spawn(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    # Its own session: the whole group (the CLI and any BROWSER it runs) is killed together.
    return subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )


def write_browser_wrapper(workdir: Path, capture_file: Path) -> Path:
    """compat §11: the CLI runs $BROWSER as one program path (it does not split on spaces),
    so BROWSER is a generated wrapper in lab's private 0700 directory."""
    script = Path(__file__).with_name("browser_capture.py")
    command = shlex.join([sys.executable, "-I", "-S", str(script), str(capture_file)])
    wrapper = workdir / "browser"
    fd = os.open(wrapper, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
    with os.fdopen(fd, "w") as f:
        f.write(f'#!/bin/sh\nexec {command} "$@"\n')
    return wrapper


def _launch(provider: Agent) -> _Login:
    workdir = Path(tempfile.mkdtemp(prefix="lab-login-"))  # mkdtemp: 0700
    env = _env(provider)
    env["BROWSER"] = str(write_browser_wrapper(workdir, workdir / "browser-url"))
    try:
        proc = _spawn([provider.binary(), "auth", "login"], env)
    except OSError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise LoginFailed(f"The CLI could not be started: {exc.strerror or exc}.") from None
    login = _Login(proc=proc, workdir=workdir)
    for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        assert stream is not None
        reader = threading.Thread(target=_read_lines, args=(name, stream, login.lines), daemon=True)
        reader.start()
        login.readers.append(reader)
    return login


def _read_lines(name: str, stream: IO[bytes], lines: queue.Queue[tuple[str, str | None]]) -> None:
    # Line-oriented: the prompt `Paste code here if prompted > ` has no newline, so it only
    # ever arrives glued to the next line (compat §11); nothing here waits for it.
    try:
        for raw in iter(lambda: stream.readline(MAX_LINE), b""):
            lines.put((name, raw.decode("utf-8", "replace").rstrip("\r\n")))
    except (OSError, ValueError):
        pass  # the stream was closed under us by _reap
    finally:
        lines.put((name, None))


def _read_start(login: _Login) -> LoginStart:
    deadline = time.monotonic() + URL_TIMEOUT_S
    stderr: list[str] = []
    closed = 0
    after_mark = False
    while closed < 2:
        try:
            name, line = login.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise LoginTimeout(f"The CLI printed no sign-in link within {URL_TIMEOUT_S:.0f} s.") from None
        if line is None:
            closed += 1
        elif name == "stderr":
            stderr.append(line)
        else:
            if not after_mark and VISIT_MARK in line:
                after_mark, line = True, line.split(VISIT_MARK, 1)[1]
            if after_mark and line.strip():
                return LoginStart(url=_checked_url(line.strip()), alternatives=_alternatives(login))
    detail = _tail("\n".join(stderr).encode()) or "it printed no reason"
    raise LoginFailed(f"The login command ended before it printed a sign-in link: {detail}")


def _alternatives(login: _Login) -> tuple[tuple[str, str], ...]:
    url = _captured_url(login.capture_file)
    port = localhost_port(url) if url else None
    if url is None or port is None:
        return ()  # honest degradation: only the code-paste link
    return (
        (
            "Or, from a browser on the machine lab runs on, open this link instead: it finishes the "
            "login by itself, with no code to paste. From another machine, forward the port first "
            f"(ssh -L {port}:localhost:{port} <lab's host>); the link works only while this login waits.",
            url,
        ),
    )


def _captured_url(capture_file: Path) -> str | None:
    deadline = time.monotonic() + BROWSER_GRACE_S
    while True:
        with contextlib.suppress(FileNotFoundError):
            first = capture_file.read_text(encoding="utf-8").split("\n", 1)[0].strip()
            if first:
                try:
                    return _checked_url(first)
                except LoginFailed:
                    return None
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)  # the CLI runs BROWSER within milliseconds of printing its link


def _checked_url(url: str) -> str:
    # Rendered as a link: only a plain https URL, never javascript: or a second line.
    if not url.startswith("https://") or len(url) > MAX_URL or any(c.isspace() for c in url):
        raise LoginFailed("The CLI printed a sign-in link lab does not recognise.")
    return url


def localhost_port(url: str) -> int | None:
    """compat §11: the BROWSER URL's redirect_uri is http://localhost:<port>/callback."""
    redirect = parse_qs(urlsplit(url).query).get("redirect_uri", [""])[0]
    parts = urlsplit(redirect)
    try:
        port = parts.port
    except ValueError:
        return None
    return port if parts.scheme == "http" and parts.hostname == "localhost" else None


def _outcome(provider: Agent, login: _Login, returncode: int) -> AuthStatus:
    if returncode == 0:
        status = auth_status(provider)
        if not status.logged_in:
            raise LoginFailed("The login command reported success, but the CLI still reports no login.")
        return status
    reason = _failure_reason(login)
    if reason.startswith(REFUSED_CODE):
        raise InvalidCode(reason)
    if reason:
        raise LoginFailed(f"{provider.display_name()} could not log in: {reason}")
    if login.cancelled:
        raise LoginFailed("The login was stopped by a newer login or a logout.")
    raise LoginFailed(f"The login command ended with exit status {returncode}.")


def _failure_reason(login: _Login) -> str:
    while True:
        try:
            _, line = login.lines.get_nowait()
        except queue.Empty:
            return ""
        if line is not None and FAILURE_MARK in line:
            return line.split(FAILURE_MARK, 1)[1].strip()[:500]


def _tail(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return text.splitlines()[-1][:300] if text else ""
