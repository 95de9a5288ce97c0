"""An offline stand-in for a CLI's sign-in servers, reached through HTTPS_PROXY (shared by every
provider).

A Node CLI whose login hard-wires its production endpoints still honours HTTPS_PROXY (it sends
`CONNECT <host>:443`) and NODE_EXTRA_CA_CERTS. So a test makes a throwaway CA plus a leaf
certificate for the provider's hosts, and this proxy answers CONNECT, terminates TLS with that
leaf and answers the endpoints itself: a provider subclasses LoginProxy in
`compat/<pkg>/login_proxy.py` and overrides `respond`. Nothing leaves the machine: CONNECT to any
other host is refused.

Stdlib + `cryptography` only (no Django). Test-only: production never sets these variables.

    certs = make_certs(tmp_path / "tls", hosts)
    with MyLoginProxy(certs, hosts) as proxy:
        env = proxy.env()  # {"HTTPS_PROXY": ..., "NODE_EXTRA_CA_CERTS": ...}
"""

from __future__ import annotations

import datetime
import json
import socket
import socketserver
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Certs:
    ca_pem: Path
    leaf_pem: Path
    leaf_key: Path


def make_certs(directory: Path, hosts: tuple[str, ...]) -> Certs:
    """A throwaway CA and one leaf for `hosts`, signed by it, valid for a day."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lab test CA (throwaway)")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    certs = Certs(directory / "ca.pem", directory / "leaf.pem", directory / "leaf.key")
    certs.ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    certs.leaf_pem.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    certs.leaf_key.write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return certs


@dataclass
class Recorded:
    method: str
    host: str
    path: str
    body: Any = None


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    proxy: LoginProxy


class _Tunnel(BaseHTTPRequestHandler):
    """HTTP/1.1 over the terminated TLS tunnel; `host` is the CONNECT target."""

    protocol_version = "HTTP/1.1"
    host = ""
    proxy: LoginProxy

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the requests are recorded, not printed

    def _body(self) -> Any:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while (size := int(self.rfile.readline().strip() or b"0", 16)) > 0:
                raw += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode(errors="replace")

    def _answer(self) -> None:
        path = self.path.split("?", 1)[0]
        body = self._body() if self.command in ("POST", "PUT", "PATCH") else None
        self.proxy.requests.append(Recorded(self.command, self.host, self.path, body))
        status, payload = self.proxy.respond(self.host, self.command, path)
        # bytes are sent as they are (a streamed answer, e.g. server-sent events), else JSON
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer


class _Connect(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        head = self.rfile.readline().decode("latin-1").split()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass  # the CONNECT request's headers are not needed
        proxy = self.server.proxy
        if len(head) < 2 or head[0] != "CONNECT":
            self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        host = head[1].rsplit(":", 1)[0]
        proxy.connects.append(host)
        if proxy.refuses(host):
            self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        self.wfile.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        self.wfile.flush()
        try:
            tls = proxy.tls.wrap_socket(self.connection, server_side=True)
        except (ssl.SSLError, OSError):
            return  # the client refused the certificate: nothing to answer
        handler = type("Tunnel", (_Tunnel,), {"host": host, "proxy": proxy})
        try:
            handler(tls, self.client_address, self.server)
        except (ssl.SSLError, OSError):
            pass
        finally:
            tls.close()


class LoginProxy:
    """The CONNECT proxy and TLS terminator; a provider's subclass answers the requests."""

    def __init__(self, certs: Certs, hosts: tuple[str, ...]) -> None:
        self.certs, self.hosts = certs, hosts
        self.refuse_connect = False  # answer every CONNECT with 502: the servers are unreachable
        self.requests: list[Recorded] = []
        self.connects: list[str] = []
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(certs.leaf_pem, certs.leaf_key)
        self.tls.set_alpn_protocols(["http/1.1"])
        self._server = _Server(("127.0.0.1", 0), _Connect)
        self._server.proxy = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="login-proxy", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def env(self) -> dict[str, str]:
        return {
            "HTTPS_PROXY": self.url,
            "https_proxy": self.url,
            "NODE_EXTRA_CA_CERTS": str(self.certs.ca_pem),
        }

    def refuses(self, host: str) -> bool:
        return host not in self.hosts or self.refuse_connect

    def respond(self, host: str, method: str, path: str) -> tuple[int, dict[str, Any] | bytes]:
        """(status, JSON body, or bytes sent as they are) for one request inside the tunnel."""
        return 404, {"error": "not_found"}

    def start(self) -> LoginProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LoginProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- child-process accounting (the login tests assert nothing is left behind) ---------------


class SpawnRecorder:
    """Stands in for an adapter's login-process spawner and keeps every child it starts."""

    def __init__(self, spawn: Any) -> None:
        self._spawn = spawn
        self.procs: list[Any] = []

    def __call__(self, argv: list[str], env: dict[str, str]) -> Any:
        proc = self._spawn(argv, env)
        self.procs.append(proc)
        return proc


def group_members(pgid: int) -> list[int]:
    """Live (or zombie) processes in process group `pgid`, read from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it exited while we looked
        if int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def leftovers(procs: list[Any]) -> list[str]:
    """What is still around of these children: unreaped ones, and anything in their groups."""
    problems = []
    for proc in procs:
        if proc.returncode is None:
            problems.append(f"pid {proc.pid} was never reaped")
        problems += [f"pid {pid} still runs in group {proc.pid}" for pid in group_members(proc.pid)]
    return problems
