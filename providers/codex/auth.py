"""Codex's login: an API key, stored by the CLI itself (compat/codex/COMPAT-adapter.md §10).

`codex login --with-api-key` reads the key on stdin (never an argv: every local user can read
/proc/*/cmdline) and writes $CODEX_HOME/auth.json; `codex login status` says whether a
credential is there. A custom model provider (config.toml `model_provider` with an `env_key`)
needs no login at all: its key comes from the agent's environment. Neither proves the service
accepts the key, so the status is never `verified`.
"""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path
from typing import Protocol

from providers.codex.seed import CONFIG_MAX_BYTES
from providers.errors import LoginFailed, LoginTimeout
from providers.safefile import read_regular
from providers.schema import AuthStatus, LoginStart


class Agent(Protocol):
    """What the login needs of the provider: how to run its binary and where its home is (the
    provider passes itself; this module never imports it, so the two do not import each other)."""

    def display_name(self) -> str: ...

    def binary(self) -> str: ...

    def agent_env(self) -> dict[str, str]: ...

    def codex_home(self) -> Path: ...


TIMEOUT_S = 20.0
API_KEY_NAME = "OPENAI_API_KEY"


def _run(provider: Agent, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            [provider.binary(), *args],
            input=stdin,
            capture_output=True,
            env=provider.agent_env(),
            timeout=TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise LoginTimeout("Codex did not answer in time.") from None
    except OSError as exc:
        raise LoginFailed(f"Codex could not be run: {exc.strerror}") from None


def provider_key(provider: Agent) -> str:
    """The env_key of the custom model provider config.toml selects, when lab passes it to the
    agent ("" otherwise): such a provider starts without a login."""
    try:
        raw = read_regular(provider.codex_home() / "config.toml", CONFIG_MAX_BYTES, follow=True)
        config = tomllib.loads(raw.decode("utf-8"))
    except (OSError, ValueError):  # missing, not a regular file, too large, not UTF-8 or TOML
        return ""
    name = config.get("model_provider")
    entry = config.get("model_providers", {}).get(name) if isinstance(name, str) else None
    key = entry.get("env_key") if isinstance(entry, dict) else None
    if isinstance(key, str) and provider.agent_env().get(key):
        return key
    return ""


def auth_status(provider: Agent) -> AuthStatus:
    key = provider_key(provider)
    if key:
        return AuthStatus(
            logged_in=True,
            method="api-key",
            detail=f"The configured model provider takes its key from {key}.",
            verified=False,
            external=f"{key} in the agent's environment",
        )
    proc = _run(provider, "login", "status")
    # §10: its own lines, without the "WARNING: …" notes it prints about CODEX_HOME.
    lines = [
        line.strip()
        for line in (proc.stdout + proc.stderr).decode(errors="replace").splitlines()
        if line.strip() and not line.startswith("WARNING:")
    ]
    if proc.returncode != 0 or "Not logged in" in lines:
        return AuthStatus(logged_in=False, detail="Codex has no credential yet.")
    # §10: "API key configured - sk-test-***56789" (the CLI masks the key itself), then
    # "Authentication is checked when you send a request.": configured, not verified.
    method = "api-key" if any("API key" in line for line in lines) else "chatgpt"
    return AuthStatus(logged_in=True, method=method, detail=" ".join(lines)[:200], verified=False)


def login_with_api_key(provider: Agent, key: str) -> AuthStatus:
    key = key.strip()
    if not key or any(c.isspace() for c in key):
        raise LoginFailed("That is not an API key.")
    proc = _run(provider, "login", "--with-api-key", stdin=key.encode() + b"\n")
    if proc.returncode != 0:
        raise LoginFailed(
            "Codex did not accept the key: " + proc.stderr.decode(errors="replace").strip()[:200]
        )
    return auth_status(provider)


def login_start(provider: Agent) -> LoginStart:
    raise LoginFailed(
        f"{provider.display_name()} logs in with an API key: set {API_KEY_NAME} in lab's agent "
        "environment, or configure a model provider in lab's Codex config."
    )


def logout(provider: Agent) -> AuthStatus:
    proc = _run(provider, "logout")
    if proc.returncode != 0 and b"Not logged in" not in proc.stdout + proc.stderr:
        raise LoginFailed("Codex could not log out: " + proc.stderr.decode(errors="replace").strip()[:200])
    return auth_status(provider)
