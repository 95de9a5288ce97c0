"""lab's VAPID key pair (RFC 8292): generated once into the data dir, 0600, and kept. No Django:
the sender and the tests read it from a path.

A push service binds a browser's subscription to the public key the page subscribed with, so
a new key would silently orphan every subscription: the file is written once (a temp file
linked into place, so two workers starting together keep the first one) and never replaced.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from py_vapid import Vapid02


def _write_once(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, path)  # another process's key, linked first, wins
    except FileExistsError:
        pass
    finally:
        tmp.unlink()


def load_or_create(path: Path) -> Vapid02:
    """The key pair in `path`, generated there (0600) when the file does not exist yet."""
    if not path.exists():
        fresh = Vapid02()
        fresh.generate_keys()
        _write_once(path, fresh.private_pem())
    return Vapid02.from_pem(path.read_bytes())


def public_key(key: Vapid02) -> str:
    """The applicationServerKey a browser subscribes with: the raw P-256 point, base64url."""
    raw = key.public_key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
