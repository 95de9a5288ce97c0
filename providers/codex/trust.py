"""A checkout's own Codex files, and Codex's record of trust in a repository (COMPAT-adapter §15).

Codex 0.171.0 loads a folder's `.codex/` layer (config.toml, hooks.json, rules) only when the
folder is trusted, and finds a linked worktree's trust under its main checkout when the
worktree has no entry of its own. It has no flag that starts a trusted folder without that
layer, and an untrusted one holds on its "Open restricted" screen, so lab starts an untrusted
repository only when its worktree has no `.codex/` at all. No Django.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

import orjson

from providers.codex.seed import CONFIG, ConfigRefused, _read, _trust, config_lock
from providers.safefile import read_regular
from providers.schema import RepositorySetting

PROJECT_DIR = ".codex"
MAX_BYTES = 1 << 20
# Keys of a project config that decide where requests go or which credential is sent.
REDIRECTING_KEYS = {
    "model_provider",
    "model_providers",
    "openai_base_url",
    "chatgpt_base_url",
    "experimental_bearer_token",
}
# Keys that only shape the session.
QUIET_KEYS = {"model", "model_reasoning_effort", "model_verbosity", "hide_agent_reasoning", "file_opener"}
# A server name lab can put in a `-c mcp_servers.<name>.enabled=false` override unquoted.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def project_entries(checkout: Path) -> list[str]:
    """The names in the checkout's `.codex/` (a file or link there is also "a layer")."""
    path = Path(checkout) / PROJECT_DIR
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return [PROJECT_DIR]
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []
    except OSError:
        return [PROJECT_DIR]


def repository_settings(checkout: Path) -> list[RepositorySetting]:
    rows: list[RepositorySetting] = []
    checkout = Path(checkout)
    for name in project_entries(checkout):
        rel = f"{PROJECT_DIR}/{name}" if name != PROJECT_DIR else PROJECT_DIR
        if name == CONFIG:
            config = project_config(checkout, rows)
            if config is not None:
                rows += _config_rows(rel, config)
        elif name == "hooks.json":
            rows += _hook_rows(rel, checkout / rel)
        else:
            # rules/*.rules (exec policies), and anything else Codex may read from its layer.
            rows.append(RepositorySetting(rel, "project file", "loaded by Codex in a trusted folder"))
    return rows


def project_config(checkout: Path, problems: list[RepositorySetting] | None = None) -> dict[str, Any] | None:
    """The checkout's `.codex/config.toml`, parsed; None when absent or unreadable (a row in
    `problems` says why)."""
    rel = f"{PROJECT_DIR}/{CONFIG}"
    raw = _read_bounded(Path(checkout) / rel)
    if raw is None:
        return None
    if isinstance(raw, str):
        (problems if problems is not None else []).append(RepositorySetting(rel, "unreadable", raw))
        return None
    try:
        return tomllib.loads(raw.decode("utf-8", "replace"))
    except tomllib.TOMLDecodeError:
        (problems if problems is not None else []).append(
            RepositorySetting(rel, "unreadable", "not TOML Codex can read: its content is unknown")
        )
        return None


def _read_bounded(path: Path) -> bytes | str | None:
    """The file's bytes; None when absent; a reason (str) when lab cannot read it (not a
    regular file of at most 1 MiB). Never waits on a FIFO, never follows a link."""
    try:
        return read_regular(path, MAX_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"{exc.strerror or exc}: its content is unknown"


def disabled_servers(config: dict[str, Any] | None) -> dict[str, str]:
    """§15: the `-c mcp_servers.<name>=…` value that turns each declared server off. Codex
    validates the override as a server of its own and then merges it into the project's, so
    `enabled = false` alone is refused ("invalid transport") and the override names a
    transport of the same kind, harmless were it ever started."""
    servers = (config or {}).get("mcp_servers")
    if not isinstance(servers, dict):
        return {}
    return {
        name: '{url="http://127.0.0.1:1/", enabled=false}'
        if isinstance(spec, dict) and "url" in spec
        else '{command="/bin/true", enabled=false}'
        for name, spec in servers.items()
        if isinstance(name, str)
    }


def _config_rows(rel: str, config: dict[str, Any]) -> list[RepositorySetting]:
    rows = []
    for key, value in config.items():
        if key == "mcp_servers" and isinstance(value, dict):
            for name, spec in value.items():
                what = (spec.get("command") or spec.get("url") or "") if isinstance(spec, dict) else spec
                args = spec.get("args") if isinstance(spec, dict) else None
                if isinstance(args, list):
                    what = " ".join(str(a) for a in [what, *args])
                rows.append(RepositorySetting(rel, "MCP server", f"{name}: {_short(what)}"))
        elif key == "shell_environment_policy":
            rows.append(RepositorySetting(rel, "shell policy", _short(value)))
        elif key in ("notify", "hooks"):
            rows.append(RepositorySetting(rel, "command" if key == "notify" else "hook", _short(value)))
        elif key in REDIRECTING_KEYS:
            rows.append(RepositorySetting(rel, "model endpoint", f"{key}: {_short(value)}", redirects=True))
        elif key not in QUIET_KEYS:
            rows.append(RepositorySetting(rel, "setting", f"{key}: {_short(value)}"))
    return rows


def _hook_rows(rel: str, path: Path) -> list[RepositorySetting]:
    raw = _read_bounded(path)
    if raw is None:
        return []
    if isinstance(raw, str):
        return [RepositorySetting(rel, "unreadable", raw)]
    try:
        hooks = orjson.loads(raw).get("hooks", {})
    except (orjson.JSONDecodeError, AttributeError):
        return [RepositorySetting(rel, "unreadable", "not JSON Codex can read: its content is unknown")]
    rows = []
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else [groups]:
            handlers = group.get("hooks", []) if isinstance(group, dict) else [group]
            for handler in handlers if isinstance(handlers, list) else [handlers]:
                what = handler.get("command", handler) if isinstance(handler, dict) else handler
                rows.append(RepositorySetting(rel, "hook", f"{event}: {_short(what)}"))
    return rows


def _short(value: object, limit: int = 300) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def repository_trusted(codex_home: Path, repository: Path) -> bool:
    try:
        config = tomllib.loads(_read(Path(codex_home) / CONFIG))
    except (tomllib.TOMLDecodeError, ConfigRefused):
        return False
    entry = config.get("projects", {}).get(os.path.realpath(repository))
    return isinstance(entry, dict) and entry.get("trust_level") == "trusted"


def trust_repository(codex_home: Path, repository: Path) -> list[Path]:
    """`[projects."<main checkout>"] trust_level = "trusted"`, as Codex writes it when its folder
    prompt is accepted there. An operator's explicit "untrusted" is theirs: refused."""
    path = Path(codex_home) / CONFIG
    with config_lock(Path(codex_home)):
        return [path] if _trust(path, project=os.path.realpath(repository)) else []
