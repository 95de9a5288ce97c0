"""An offline stand-in for Google's sign-in servers as Gemini CLI uses them (the shared proxy is
compat/login_proxy.py).

COMPAT §10: the real CLI honours HTTPS_PROXY (CONNECT oauth2.googleapis.com:443 …) and
NODE_EXTRA_CA_CERTS while it hard-wires Google's endpoints. This subclass answers the token
exchange (one code is accepted, any other gets Google's invalid_grant), the token info, the
user info (the account's email) and Code Assist's loadCodeAssist (a free-tier user with a
project): what the CLI asks for between the pasted code and its prompt. A run signed in this way
sends its turns to Code Assist's streamGenerateContent: the stand-in answers each with one
scripted text (`Behaviour.answer`) in Code Assist's envelope ({"response": <Gemini API
response>} per server-sent event).

    certs = gemini_certs(tmp_path / "tls")
    with GeminiLoginProxy(certs) as proxy:
        env = proxy.env()
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from compat.login_proxy import Certs, LoginProxy, Recorded, make_certs

TOKEN_HOST = "oauth2.googleapis.com"
USERINFO_HOST = "www.googleapis.com"
CODE_ASSIST_HOST = "cloudcode-pa.googleapis.com"
HOSTS = (TOKEN_HOST, USERINFO_HOST, CODE_ASSIST_HOST)

GOOD_CODE = "4/0Ab-lab-stand-in-code"
INVALID_GRANT = {"error": "invalid_grant", "error_description": "Malformed auth code."}


def gemini_certs(directory: Path) -> Certs:
    """A throwaway CA and one leaf for the Google hosts Gemini CLI's sign-in reaches."""
    return make_certs(directory, HOSTS)


@dataclass
class Behaviour:
    email: str = "operator@example.invalid"
    project: str = "lab-stand-in-project"
    good_code: str = GOOD_CODE
    answer: str = "Hello from the Code Assist stand-in."
    refuse_refresh: bool = False  # stored credentials Google no longer takes


def token_response() -> dict[str, Any]:
    return {
        "access_token": "ya29.lab-stand-in-access-token",
        "refresh_token": "1//lab-stand-in-refresh-token",
        "expires_in": 3599,
        "scope": "https://www.googleapis.com/auth/cloud-platform openid "
        "https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile",
        "token_type": "Bearer",
        "id_token": "",
    }


def model_response(text: str) -> dict[str, Any]:
    """One finished Gemini API answer of `text`."""
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "gemini-2.5-flash",
    }


class GeminiLoginProxy(LoginProxy):
    def __init__(self, certs: Certs, behaviour: Behaviour | None = None) -> None:
        super().__init__(certs, HOSTS)
        self.behaviour = behaviour or Behaviour()

    def respond(self, host: str, method: str, path: str) -> tuple[int, dict[str, Any] | bytes]:
        b = self.behaviour
        if host == TOKEN_HOST and path == "/token":
            form = self.requests[-1].body
            fields = parse_qs(form) if isinstance(form, str) else {}
            if fields.get("grant_type") == ["refresh_token"]:
                return (400, INVALID_GRANT) if b.refuse_refresh else (200, token_response())
            if fields.get("code") != [b.good_code]:
                return 400, INVALID_GRANT
            return 200, token_response()
        if host == TOKEN_HOST and path == "/tokeninfo":
            return 200, {"expires_in": 3500, "scope": token_response()["scope"], "email": b.email}
        if host == USERINFO_HOST and path == "/oauth2/v2/userinfo":
            return 200, {"id": "100000000000000000001", "email": b.email, "verified_email": True}
        if host == CODE_ASSIST_HOST and path.endswith(":loadCodeAssist"):
            return 200, {
                "currentTier": {"id": "free-tier", "name": "Gemini Code Assist for individuals"},
                "allowedTiers": [{"id": "free-tier", "name": "Gemini Code Assist for individuals"}],
                "cloudaicompanionProject": b.project,
            }
        if host == CODE_ASSIST_HOST and path.endswith(":streamGenerateContent"):
            event = json.dumps({"traceId": "lab-stand-in", "response": model_response(b.answer)})
            return 200, f"data: {event}\n\n".encode()
        if host == CODE_ASSIST_HOST and path.endswith(":generateContent"):
            return 200, {"traceId": "lab-stand-in", "response": model_response(b.answer)}
        if host == CODE_ASSIST_HOST and path.endswith(":countTokens"):
            return 200, {"totalTokens": 1}
        return 200, {}  # other calls after sign-in (quota, experiments) need no particular answer

    def token_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.host == TOKEN_HOST and r.path.split("?", 1)[0] == "/token"]
