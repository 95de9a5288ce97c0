"""A login started from the browser and waiting for its code: the bookkeeping every CLI's
code-paste login shares. No Django.

One login per provider at a time (a new start or a logout discards the pending one); its code
is taken once; a login nobody finishes is reaped after the TTL, or as soon as its CLI exits on
its own; every login dies with lab (no parked processes). Reaping kills the CLI's whole process
group, waits for it, lets the adapter close what it read through (pipes, a pseudo-terminal),
and removes the login's throwaway folder.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from providers.errors import InvalidCode, LoginTimeout

NO_LOGIN = "No login is waiting for a code. Start a new login."
KILL_GRACE_S = 3.0


@dataclass
class PendingLogin:
    proc: subprocess.Popen[bytes]
    workdir: Path
    state: str = "pending"  # pending | sent (the code is in) | expired | ended
    cancelled: bool = False  # stopped by a newer start or a logout
    reaped: bool = False

    def close_io(self) -> None:
        """Close what lab read the CLI through, once its group is gone (the adapter's)."""


class PendingLogins[L: PendingLogin]:
    """The pending logins of one adapter, by provider id. `ttl_s` is read when a login starts
    waiting, so a test may shorten it."""

    def __init__(self, ttl_s: Callable[[], float]) -> None:
        self.ttl_s = ttl_s
        self.logins: dict[str, L] = {}
        self._locks: dict[str, threading.Lock] = {}
        atexit.register(self.reap_all)

    @contextlib.contextmanager
    def locked(self, provider_id: str) -> Iterator[None]:
        with self._locks.setdefault(provider_id, threading.Lock()):
            yield

    def start[R](self, provider_id: str, launch: Callable[[], L], read: Callable[[L], R]) -> R:
        """A new login for the provider, the pending one ended first (one at a time): launched,
        read until it asks for its code (`read`'s result), then kept waiting for the code. A
        login that fails before it asks is reaped."""
        with self.locked(provider_id):
            self.discard(provider_id)
            login = launch()
            try:
                started = read(login)
            except BaseException:
                self.reap(login)
                raise
            self.wait_for_code(provider_id, login)
            return started

    def wait_for_code(self, provider_id: str, login: L) -> None:
        """Keep `login` as the provider's pending one (under `locked`) and watch its TTL."""
        self.logins[provider_id] = login
        watch = threading.Thread(
            target=self._watch, args=(provider_id, login), name="login-watch", daemon=True
        )
        watch.start()

    def claim(self, provider_id: str) -> L:
        """The pending login takes one code, once (under `locked`)."""
        login = self.logins.get(provider_id)
        if login is None or login.state in ("sent", "ended"):
            raise InvalidCode(NO_LOGIN)
        if login.state == "expired":
            del self.logins[provider_id]
            raise LoginTimeout(
                f"The login waited more than {self.ttl_s() / 60:.0f} minutes for its code and was stopped. "
                "Start a new login."
            )
        if login.proc.poll() is not None:
            del self.logins[provider_id]
            self.reap(login)
            raise InvalidCode(NO_LOGIN)
        login.state = "sent"
        return login

    def finish(self, provider_id: str, login: L) -> None:
        """`login` is over (its code was taken and answered, or it failed): forget and reap it."""
        with self.locked(provider_id):
            if self.logins.get(provider_id) is login:
                del self.logins[provider_id]
            self.reap(login)

    def discard(self, provider_id: str) -> None:
        """A newer start or a logout ends the pending login (under `locked`)."""
        login = self.logins.pop(provider_id, None)
        if login is not None:
            login.cancelled = True
            self.reap(login)

    def _watch(self, provider_id: str, login: L) -> None:
        """Reaps a login nobody finishes: its TTL ran out, or the CLI exited on its own."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            login.proc.wait(timeout=self.ttl_s())
        with self.locked(provider_id):
            if login.state != "pending":
                return  # the code's taker owns it now, or it is already over
            login.state = "expired" if login.proc.poll() is None else "ended"
            self.reap(login)

    @staticmethod
    def reap(login: PendingLogin) -> None:
        """Kill the group if it still runs, wait for it, close the adapter's I/O, remove the
        throwaway folder."""
        if login.reaped:
            return
        login.reaped = True
        if login.proc.poll() is None:
            signal_group(login.proc, signal.SIGTERM)
            try:
                login.proc.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                signal_group(login.proc, signal.SIGKILL)
                login.proc.wait()
        signal_group(login.proc, signal.SIGKILL)  # anything the CLI left in its group
        login.close_io()
        shutil.rmtree(login.workdir, ignore_errors=True)

    def reap_all(self) -> None:
        # No parked processes: a pending login dies with lab.
        for provider_id in list(self.logins):
            self.discard(provider_id)


def checked_code(code: str, *, pattern: re.Pattern[str], allowed: str, max_chars: int) -> str:
    """The code as the CLI takes it, or InvalidCode saying why. The messages never echo the
    code: it is a credential."""
    code = code.strip()  # a paste often brings a trailing newline or spaces
    if not code:
        raise InvalidCode("Paste the code the sign-in page showed you.")
    if len(code) > max_chars:
        raise InvalidCode(f"That is longer than a sign-in code ({max_chars} characters at most).")
    if not pattern.fullmatch(code):
        raise InvalidCode(
            f"A sign-in code has only letters, digits and {allowed} in it; check what you pasted."
        )
    return code


def signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)  # start_new_session: the group id is the child's pid
