"""An offline stand-in for Claude Code's sign-in servers (the shared proxy is compat/login_proxy.py).

COMPAT §10: the real `claude auth login` honours HTTPS_PROXY (it sends
`CONNECT platform.claude.com:443`) and NODE_EXTRA_CA_CERTS, while it hard-wires the production
endpoints. This subclass answers the token, profile and roles endpoints itself.

    certs = claude_certs(tmp_path / "tls")
    with ClaudeLoginProxy(certs) as proxy:
        env = proxy.env()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat.login_proxy import Certs, LoginProxy, Recorded, make_certs

TOKEN_HOST = "platform.claude.com"
API_HOST = "api.anthropic.com"
HOSTS = (TOKEN_HOST, API_HOST)

INVALID_GRANT = {"error": "invalid_grant", "error_description": "Invalid 'code' in request."}


def claude_certs(directory: Path) -> Certs:
    """A throwaway CA and one leaf for Claude Code's two sign-in hosts."""
    return make_certs(directory, HOSTS)


@dataclass
class Account:
    """What the fake servers say about the signed-in operator (shapes: compat §10)."""

    email: str = "operator@example.invalid"
    account_uuid: str = "00000000-0000-4000-8000-0000000000a1"
    org_uuid: str = "00000000-0000-4000-8000-0000000000b2"
    org_name: str = "Example Org"


@dataclass
class Behaviour:
    token_status: int = 200  # 400 -> invalid_grant
    refuse_connect: bool = False  # answer CONNECT with 502: the sign-in server is unreachable
    account: Account = field(default_factory=Account)


def token_response(account: Account) -> dict[str, Any]:
    return {
        "access_token": "sk-ant-oat01-fake-access-token",
        "refresh_token": "sk-ant-ort01-fake-refresh-token",
        "expires_in": 3600,
        "scope": "user:inference user:profile user:sessions:claude_code",
        "token_type": "Bearer",
        "account": {"uuid": account.account_uuid, "email_address": account.email},
        "organization": {"uuid": account.org_uuid, "name": account.org_name},
    }


def profile_response(account: Account) -> dict[str, Any]:
    return {
        "account": {
            "uuid": account.account_uuid,
            "email": account.email,
            "display_name": "Operator",
            "has_claude_max": True,
            "has_claude_pro": False,
        },
        "organization": {
            "uuid": account.org_uuid,
            "name": account.org_name,
            "organization_type": "claude_max",
            "billing_type": "stripe_subscription",
            "rate_limit_tier": "default_claude_max_20x",
        },
    }


def roles_response(account: Account) -> dict[str, Any]:
    return {"organization_role": "admin", "workspace_role": None, "organization_name": account.org_name}


class ClaudeLoginProxy(LoginProxy):
    def __init__(self, certs: Certs, behaviour: Behaviour | None = None) -> None:
        super().__init__(certs, HOSTS)
        self.behaviour = behaviour or Behaviour()

    def refuses(self, host: str) -> bool:
        return super().refuses(host) or self.behaviour.refuse_connect

    def respond(self, host: str, method: str, path: str) -> tuple[int, dict[str, Any]]:
        account = self.behaviour.account
        if host == TOKEN_HOST and path == "/v1/oauth/token":
            if self.behaviour.token_status != 200:
                return self.behaviour.token_status, INVALID_GRANT
            return 200, token_response(account)
        if host == API_HOST and path == "/api/oauth/profile":
            return 200, profile_response(account)
        if host == API_HOST and path == "/api/oauth/claude_cli/roles":
            return 200, roles_response(account)
        return 200, {}  # other calls the CLI makes after sign-in need no particular answer

    def token_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.host == TOKEN_HOST and r.path.startswith("/v1/oauth/token")]
