"""The shared test bed works with no provider in it: the live-TUI harness drives any program
in tmux, and the login stand-in serves any host list a subclass answers for."""

from __future__ import annotations

import http.client
import re
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compat.live import LiveTUI
from compat.login_proxy import LoginProxy, make_certs

# A stand-in CLI: a prompt, then one echo per line it reads.
ECHO = (
    "import sys\n"
    "print('READY>', flush=True)\n"
    "for line in sys.stdin:\n"
    "    print('GOT ' + line.strip(), flush=True)\n"
)


class EchoTUI(LiveTUI):
    ready_re = re.compile(r"READY>")


def _alive(socket: str) -> bool:
    probe = subprocess.run(["tmux", "-L", socket, "list-sessions"], capture_output=True, timeout=10)
    return probe.returncode == 0


def test_the_harness_drives_any_program_and_kills_its_server(tmp_path):
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    tui = EchoTUI(env, tmp_path, binary=Path(sys.executable))
    with tui.start("-c", ECHO):
        tui.wait_ready(timeout=30)
        assert tui.argv == [sys.executable, "-c", ECHO]  # nothing of any provider's added
        tui.prompt("token-7f3a")
        tui.wait_pane(r"GOT token-7f3a", timeout=30)
        assert _alive(tui.socket)
    assert not _alive(tui.socket)
    with pytest.raises(NotImplementedError):
        _ = tui.transcript_path  # where a transcript is written is the provider's to say


class ExampleLogin(LoginProxy):
    def respond(self, host: str, method: str, path: str) -> tuple[int, dict[str, Any] | bytes]:
        if path == "/token":
            return 200, {"host": host, "method": method}
        if path == "/stream":
            return 200, b"data: {}\n\n"  # a streamed answer goes as it is, not as a JSON string
        return super().respond(host, method, path)


def _through(proxy: LoginProxy, ca: Path, host: str, path: str) -> tuple[int, bytes]:
    proxy_host, proxy_port = proxy.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPSConnection(
        proxy_host, int(proxy_port), context=ssl.create_default_context(cafile=str(ca)), timeout=10
    )
    conn.set_tunnel(host, 443)
    try:
        conn.request("POST", path, body=b'{"code": "x"}', headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_the_login_stand_in_answers_its_hosts_only(tmp_path):
    hosts = ("auth.example.invalid", "api.example.invalid")
    certs = make_certs(tmp_path / "tls", hosts)
    with ExampleLogin(certs, hosts) as proxy:
        assert _through(proxy, certs.ca_pem, "auth.example.invalid", "/token") == (
            200,
            b'{"host": "auth.example.invalid", "method": "POST"}',
        )
        assert _through(proxy, certs.ca_pem, "api.example.invalid", "/stream") == (200, b"data: {}\n\n")
        assert _through(proxy, certs.ca_pem, "api.example.invalid", "/other")[0] == 404
        with pytest.raises(OSError, match="502"):
            _through(proxy, certs.ca_pem, "elsewhere.example.invalid", "/token")
        proxy.refuse_connect = True
        with pytest.raises(OSError, match="502"):
            _through(proxy, certs.ca_pem, "auth.example.invalid", "/token")
    assert proxy.connects == [
        *hosts,
        "api.example.invalid",
        "elsewhere.example.invalid",
        "auth.example.invalid",
    ]
    assert [(r.host, r.path, r.body) for r in proxy.requests] == [
        ("auth.example.invalid", "/token", {"code": "x"}),
        ("api.example.invalid", "/stream", {"code": "x"}),
        ("api.example.invalid", "/other", {"code": "x"}),
    ]
