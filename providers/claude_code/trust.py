"""What a checkout's own Claude Code files would make the agent do once trusted (COMPAT-seeding
§8): the project settings (.claude/settings.json), the local settings beside them
(.claude/settings.local.json, loaded only in a trusted run too) and the project's MCP servers
(.mcp.json). Read only, never run; no Django.

The rows name what runs a program or changes where requests go. Keys that only shape the
session (a model, a theme) are listed by name, so nothing the file holds is hidden.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from providers.safefile import read_regular
from providers.schema import RepositorySetting

SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json")
MCP_FILE = ".mcp.json"
MAX_BYTES = 1 << 20
# Settings whose value is a command the CLI runs to get a credential or a header.
CREDENTIAL_COMMANDS = (
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "gcpAuthRefresh",
    "otelHeadersHelper",
)
# Settings whose value is a command the CLI runs for the display or for file suggestions.
COMMANDS = ("statusLine", "fileSuggestion")
# Environment names that move the model endpoint, the credential or the trust of TLS.
REDIRECTING_ENV = re.compile(
    r"(.*_BASE_URL|.*API_KEY.*|.*AUTH_TOKEN.*|.*_TOKEN|ANTHROPIC_.*|CLAUDE_CODE_USE_.*|AWS_.*|GOOGLE_.*"
    r"|VERTEX.*|.*PROXY|NODE_OPTIONS|NODE_EXTRA_CA_CERTS|SSL_CERT_.*|.*CA_BUNDLE|CLOUD_ML_.*)",
    re.IGNORECASE,
)
# Keys that change nothing but how the session looks or which model it asks for.
QUIET_KEYS = {
    "$schema",
    "model",
    "outputStyle",
    "theme",
    "language",
    "spinnerTipsEnabled",
    "cleanupPeriodDays",
}


def repository_settings(checkout: Path) -> list[RepositorySetting]:
    found: list[RepositorySetting] = []
    for rel in SETTINGS_FILES:
        data = _read_json(Path(checkout), rel, found)
        if data is not None:
            found += _settings_rows(rel, data)
    servers = _read_json(Path(checkout), MCP_FILE, found)
    if servers is not None:
        found += _mcp_rows(MCP_FILE, servers.get("mcpServers"))
    return found


def _read_json(checkout: Path, rel: str, found: list[RepositorySetting]) -> dict[str, Any] | None:
    """The file's JSON object; None when absent. A file the CLI might still read but lab cannot
    (not regular, too big, not JSON) is a row of its own: its content is unknown."""
    try:
        raw = read_regular(checkout / rel, MAX_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        found.append(RepositorySetting(rel, "unreadable", f"{exc.strerror or exc}: its content is unknown"))
        return None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        found.append(RepositorySetting(rel, "unreadable", "not valid JSON: its content is unknown"))
        return None
    if not isinstance(data, dict):
        found.append(RepositorySetting(rel, "unreadable", "not a JSON object"))
        return None
    return data


def _settings_rows(rel: str, data: dict[str, Any]) -> list[RepositorySetting]:
    rows: list[RepositorySetting] = []
    for key, value in data.items():
        if key == "hooks":
            rows += _hook_rows(rel, value)
        elif key in CREDENTIAL_COMMANDS:
            rows.append(
                RepositorySetting(rel, "credential command", f"{key}: {_short(value)}", redirects=True)
            )
        elif key in COMMANDS:
            command = value.get("command", value) if isinstance(value, dict) else value
            rows.append(RepositorySetting(rel, "command", f"{key}: {_short(command)}"))
        elif key == "env" and isinstance(value, dict):
            rows += [
                RepositorySetting(
                    rel, "environment", f"{name}={_short(v)}", redirects=bool(REDIRECTING_ENV.fullmatch(name))
                )
                for name, v in value.items()
            ]
        elif key == "permissions" and isinstance(value, dict):
            rows += _permission_rows(rel, value)
        elif key == "mcpServers":
            rows += _mcp_rows(rel, value)
        elif key not in QUIET_KEYS:
            rows.append(RepositorySetting(rel, "setting", f"{key}: {_short(value)}"))
    return rows


def _hook_rows(rel: str, hooks: object) -> list[RepositorySetting]:
    if not isinstance(hooks, dict):
        return [RepositorySetting(rel, "hook", f"hooks: {_short(hooks)}")]
    rows = []
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else [groups]:
            handlers = group.get("hooks", []) if isinstance(group, dict) else [group]
            for handler in handlers if isinstance(handlers, list) else [handlers]:
                what = (
                    handler.get("command") or handler.get("url") or handler
                    if isinstance(handler, dict)
                    else handler
                )
                rows.append(RepositorySetting(rel, "hook", f"{event}: {_short(what)}"))
    return rows


def _permission_rows(rel: str, permissions: dict[str, Any]) -> list[RepositorySetting]:
    rows = []
    for rule in permissions.get("allow", []) if isinstance(permissions.get("allow"), list) else []:
        rows.append(RepositorySetting(rel, "permission allowed", _short(rule)))
    for key in ("defaultMode", "additionalDirectories"):
        if key in permissions:
            rows.append(RepositorySetting(rel, "permission", f"{key}: {_short(permissions[key])}"))
    return rows


def _mcp_rows(rel: str, servers: object) -> list[RepositorySetting]:
    if not isinstance(servers, dict):
        return []
    rows = []
    for name, spec in servers.items():
        if isinstance(spec, dict):
            what = spec.get("command") or spec.get("url") or ""
            args = spec.get("args")
            if isinstance(args, list):
                what = " ".join(str(a) for a in [what, *args])
        else:
            what = spec
        rows.append(RepositorySetting(rel, "MCP server", f"{name}: {_short(what)}"))
    return rows


def _short(value: object, limit: int = 300) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"
