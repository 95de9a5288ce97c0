"""A local push service for the tests: what a browser's push service (FCM, Mozilla's, Apple's)
does with what lab posts, checked the way the RFCs say. A subscription is made the way a
browser makes one (a P-256 key pair and a 16-byte auth secret); each POST is decrypted with
that browser's keys (RFC 8291, aes128gcm, http_ece) and its VAPID JWT verified against the key
in its Authorization header (RFC 8292). A real push service is not reachable offline."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64d(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    payload: dict[str, Any] | None  # the decrypted JSON, None when it did not decrypt
    vapid_key: str  # the k= of the Authorization header
    claims: dict[str, Any]  # the JWT's claims, {} unless its signature verified
    error: str = ""


def verify_vapid(authorization: str) -> tuple[str, dict[str, Any]]:
    """(k, claims) of a valid `vapid t=…,k=…` header (RFC 8292 section 3); ValueError otherwise."""
    scheme, _, params = authorization.partition(" ")
    if scheme.lower() != "vapid":
        raise ValueError(f"not the vapid scheme: {scheme!r}")
    parts = dict(p.strip().split("=", 1) for p in params.split(","))
    token, k = parts["t"], parts["k"]
    header_b64, claims_b64, sig_b64 = token.split(".")
    header = json.loads(b64d(header_b64))
    if header.get("alg") != "ES256":
        raise ValueError(f"alg {header.get('alg')!r}")
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64d(k))
    sig = b64d(sig_b64)
    if len(sig) != 64:
        raise ValueError("an ES256 signature is r||s, 64 bytes")
    der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
    try:
        public.verify(der, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise ValueError("the JWT's signature does not verify with k") from None
    return k, json.loads(b64d(claims_b64))


@dataclass
class Browser:
    """One browser's subscription keys (what PushManager.subscribe makes)."""

    private: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    auth: bytes = field(default_factory=lambda: os.urandom(16))

    @property
    def p256dh(self) -> str:
        raw = self.private.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return b64e(raw)


class LocalPushService:
    """A push service on 127.0.0.1: `subscribe(answer)` gives a subscription whose POSTs are
    answered `answer` (201, 404, 410, 500…); `received` lists what came, decrypted."""

    def __init__(self, delay: float = 0.0) -> None:
        self.browsers: dict[str, tuple[Browser, int]] = {}
        self.received: list[Received] = []
        self.delay = delay
        self.lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                service._record(self.path, dict(self.headers.items()), body)
                if service.delay:
                    time.sleep(service.delay)  # a slow push service, for the test that needs one
                browser = service.browsers.get(self.path)
                self.send_response(browser[1] if browser else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def subscribe(self, name: str, answer: int = 201) -> dict[str, Any]:
        browser = Browser()
        self.browsers[f"/push/{name}"] = (browser, answer)
        return {
            "endpoint": f"{self.origin}/push/{name}",
            "keys": {"p256dh": browser.p256dh, "auth": b64e(browser.auth)},
        }

    def _record(self, path: str, headers: dict[str, str], body: bytes) -> None:
        lower = {k.lower(): v for k, v in headers.items()}
        got = Received(path=path, headers=lower, payload=None, vapid_key="", claims={})
        try:
            got.vapid_key, got.claims = verify_vapid(lower.get("authorization", ""))
        except (ValueError, KeyError) as exc:
            got.error = f"vapid: {exc}"
        browser = self.browsers.get(path)
        if browser is not None and lower.get("content-encoding") == "aes128gcm":
            try:
                plain = http_ece.decrypt(
                    body, private_key=browser[0].private, auth_secret=browser[0].auth, version="aes128gcm"
                )
                got.payload = json.loads(plain)
            except Exception as exc:  # a payload that does not decrypt is what the test reports
                got.error += f" decrypt: {exc!r}"
        with self.lock:
            self.received.append(got)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
