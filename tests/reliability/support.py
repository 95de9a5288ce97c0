"""A real lab in a subprocess (manage.py serve → daphne) and a minimal websocket client, for the
tests that kill and restart lab."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[2]
GOOD_KEY = "k" * 20 + "abcdefghij0123456789ABCDEFGHIJ"
PASSWORD = "correct horse battery staple 42"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    """One lab install: its data dir, tmux socket and port; serve() starts daphne."""

    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    log: Path | None = None
    starts: int = 0

    @property
    def socket_name(self) -> str:
        return f"labrel-{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ["PATH"],
            "HOME": str(self.root / "home"),
            "LAB_DATA_DIR": str(self.root / "data"),
            "LAB_TMUX_SOCKET": self.socket_name,
            "LAB_BIND": f"127.0.0.1:{self.port}",
            "LAB_FAKE_PROVIDER_ROOT": str(self.root / "fake"),
            "DJANGO_SETTINGS_MODULE": "tests.reliability.fake_settings",
            "SECRET_KEY": GOOD_KEY,
            "PYTHONPATH": str(REPO),
            "LOG_LEVEL": "WARNING",
        }

    def manage(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(REPO / "manage.py"), *args],
            env=self.env, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=True,
        )  # fmt: skip

    def python(self, code: str, *args: str) -> object:
        """Run code with Django set up for this install; it prints one JSON value last."""
        prelude = "import django, json, sys; django.setup()\n"
        proc = subprocess.run(
            [sys.executable, "-c", prelude + code, *args],
            env=self.env, cwd=REPO, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def serve(self) -> None:
        self.starts += 1
        self.log = self.root / f"serve-{self.starts}.log"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, str(REPO / "manage.py"), "serve"],
                env=self.env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2),
            ):
                return
            time.sleep(0.1)
        raise AssertionError(f"lab did not start: {self.log.read_text()}")

    def kill(self) -> None:
        """SIGKILL daphne (serve exec'd into it: the same pid) — no cleanup runs."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    # --- HTTP as the operator's browser ---------------------------------------------------

    def login(self) -> str:
        """Log in through the real form; returns the Cookie header value."""
        status, headers, body = self.request("GET", "/login/")
        cookies = _cookies(headers)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', body).group(1)
        form = urlencode({"username": "operator", "password": PASSWORD, "csrfmiddlewaretoken": token})
        status, headers, body = self.request(
            "POST", "/login/", body=form, cookie=cookies,
            headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": self.origin},
        )  # fmt: skip
        assert status == 302, (status, body[:500])
        cookies.update(_cookies(headers))
        return "; ".join(f"{k}={v}" for k, v in cookies.items())

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, *, body: str | None = None, cookie=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        h = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
        if cookie:
            h["Cookie"] = (
                cookie if isinstance(cookie, str) else "; ".join(f"{k}={v}" for k, v in cookie.items())
            )
        conn.request(method, path, body=body, headers=h)
        response = conn.getresponse()
        data = response.read().decode(errors="replace")
        conn.close()
        return response.status, response.getheaders(), data


def _cookies(headers) -> dict[str, str]:
    out = {}
    for name, value in headers:
        if name.lower() == "set-cookie":
            k, _, rest = value.partition("=")
            out[k] = rest.split(";", 1)[0]
    return out


class WS:
    """A minimal RFC 6455 client (text frames, masked, no extensions): enough to be a browser tab."""

    def __init__(self, port: int, path: str, *, cookie: str, origin: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: {origin}\r\nCookie: {cookie}\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            assert chunk, "closed during the handshake"
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        self.status = int(head.split()[1])

    def send_json(self, value: object) -> None:
        payload = json.dumps(value).encode()
        mask = os.urandom(4)
        header = bytes([0x81])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("socket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self, timeout: float = 10.0) -> str | None:
        """The next text message (None on a close frame)."""
        self.sock.settimeout(timeout)
        message = b""
        while True:
            b0, b1 = self._read(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack(">H", self._read(2))
            elif n == 127:
                (n,) = struct.unpack(">Q", self._read(8))
            payload = self._read(n)
            if opcode == 0x8:
                return None
            if opcode in (0x9, 0xA):
                continue
            message += payload
            if b0 & 0x80:
                return message.decode()

    def until(self, predicate, timeout: float = 15.0) -> list[str]:
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"timed out; got {seen[-3:]!r}"
            frame = self.recv(timeout=remaining)
            assert frame is not None, f"closed; got {seen[-3:]!r}"
            seen.append(frame)
            if predicate(frame):
                return seen

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
