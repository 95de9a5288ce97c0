"""What a checkout's own Gemini files would make the CLI do once its folder is trusted
(compat/gemini/COMPAT.md §9). No Django; reads files only, never runs anything.

A trusted folder's `.gemini/settings.json` is layered over the user's: its hooks run, its MCP
servers start, its tool discovery command runs, its environment overrides apply; a `.env` at
the root or in `.gemini/` is loaded into the CLI's environment (a model endpoint or key there
redirects the agent).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from providers.safefile import read_regular
from providers.schema import RepositorySetting

MAX_BYTES = 1024 * 1024
SETTINGS = ".gemini/settings.json"
ENV_FILES = (".gemini/.env", ".env")
# §9: variables that change where the CLI sends requests or which credential it uses.
REDIRECTS = (
    "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_VERTEX_BASE_URL",
    "GEMINI_CLI_HOME",
)


# §9: what a trusted folder loads besides settings.json (an untrusted run refuses to start with
# any of these present: in a trusted folder every one would take effect).
PROJECT_FILES = (
    SETTINGS,
    *ENV_FILES,
    ".gemini/extensions",
    ".gemini/commands",
    ".gemini/agents",
    ".gemini/policies",
)


def project_files(checkout: Path) -> list[str]:
    """The checkout's files of PROJECT_FILES that exist (a link or anything else counts)."""
    return [name for name in PROJECT_FILES if os.path.lexists(checkout / name)]


def repository_settings(checkout: Path) -> list[RepositorySetting]:
    rows: list[RepositorySetting] = []
    raw = _read(checkout / SETTINGS)
    if isinstance(raw, str):
        rows.append(RepositorySetting(SETTINGS, "unreadable", raw))
    elif raw is not None:
        try:
            settings = json.loads(raw)
        except ValueError:
            settings = None
        if not isinstance(settings, dict):
            rows.append(RepositorySetting(SETTINGS, "unreadable", "not a JSON object"))
        else:
            rows += _settings_rows(settings)
    for name in ENV_FILES:
        env = _read(checkout / name)
        if isinstance(env, str):
            rows.append(RepositorySetting(name, "unreadable", env))
        elif env is not None:
            for line in env.decode(errors="replace").splitlines():
                key = line.strip().removeprefix("export ").partition("=")[0].strip()
                if key and not key.startswith("#"):
                    rows.append(RepositorySetting(name, "environment", key, redirects=key in REDIRECTS))
    return rows


def _settings_rows(settings: dict[str, object]) -> list[RepositorySetting]:
    rows = []
    hooks = settings.get("hooks")
    if isinstance(hooks, dict):
        for event, groups in hooks.items():
            for group in groups if isinstance(groups, list) else []:
                for hook in group.get("hooks") or [] if isinstance(group, dict) else []:
                    if isinstance(hook, dict):
                        rows.append(
                            RepositorySetting(SETTINGS, "hook", f"{event}: {_short(hook.get('command'))}")
                        )
    servers = settings.get("mcpServers")
    if isinstance(servers, dict):
        for name, server in servers.items():
            rows.append(RepositorySetting(SETTINGS, "MCP server", f"{name}: {_short(server)}"))
    tools = settings.get("tools")
    if isinstance(tools, dict):
        for key in ("discoveryCommand", "callCommand"):
            if key in tools:
                rows.append(RepositorySetting(SETTINGS, "tool command", f"{key}: {_short(tools[key])}"))
    for key in ("advanced", "security", "model"):
        if key in settings:
            rows.append(RepositorySetting(SETTINGS, "setting", f"{key}: {_short(settings[key])}"))
    return rows


def _read(path: Path) -> bytes | str | None:
    """The file's bytes, None when absent, or why lab cannot read it."""
    try:
        return read_regular(path, MAX_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or "unreadable"


def _short(value: object, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
