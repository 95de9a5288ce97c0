"""Gemini's login (compat/gemini/COMPAT.md §10): an API key in the agent's environment.

The CLI reads GEMINI_API_KEY from its environment (lab's LAB_AGENT_ENV) with the auth method
"gemini-api-key" chosen in its settings (seed.install_settings does so when none is chosen).
Finding the key proves nothing about the service accepting it: the status is never `verified`.
Google sign-in's code-paste flow was not verified offline, so lab does not offer it.
"""

from __future__ import annotations

from typing import Protocol

from providers.errors import LoginFailed
from providers.schema import AuthStatus, LoginStart

API_KEY_NAME = "GEMINI_API_KEY"


class Agent(Protocol):
    def display_name(self) -> str: ...

    def agent_env(self) -> dict[str, str]: ...


def auth_status(provider: Agent) -> AuthStatus:
    if provider.agent_env().get(API_KEY_NAME):
        return AuthStatus(
            logged_in=True,
            method="api-key",
            detail=f"{API_KEY_NAME} is set in the agent's environment.",
            verified=False,
            external=f"{API_KEY_NAME} in the agent's environment",
        )
    return AuthStatus(logged_in=False, detail=f"{API_KEY_NAME} is not set in the agent's environment.")


def login_start(provider: Agent) -> LoginStart:
    raise LoginFailed(
        f"{provider.display_name()} logs in with an API key: set {API_KEY_NAME} in lab's agent "
        "environment (LAB_AGENT_ENV)."
    )


def login_with_api_key(provider: Agent, key: str) -> AuthStatus:
    raise LoginFailed(
        f"lab does not store {provider.display_name()}'s key: set {API_KEY_NAME} in lab's agent "
        "environment (LAB_AGENT_ENV)."
    )


def logout(provider: Agent) -> AuthStatus:
    raise LoginFailed(
        f"{provider.display_name()}'s key is lab's agent environment: remove {API_KEY_NAME} from "
        "LAB_AGENT_ENV to log out."
    )
