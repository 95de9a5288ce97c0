"""Gemini's seeding: what the generic seeder writes (SEED_META) and the CLI's own grants in lab's
Gemini home (`<GEMINI_CLI_HOME>/.gemini/`): lab's hooks and the first-run settings in
settings.json, and each folder's trust in trustedFolders.json, written the way the CLI writes
them when the operator answers its screens.

No Django. Facts pinned in compat/gemini/COMPAT.md §9, §12.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from providers.errors import ProviderError
from providers.safefile import read_regular, write_private
from providers.schema import SeedMeta

SEED_META = SeedMeta(
    # §12: the CLI reads GEMINI.md at the project root into its context.
    context_file="GEMINI.md",
    # §12: workspace skills are read from .gemini/skills/<name>/SKILL.md in a trusted folder.
    skills_dir=".gemini/skills",
    exclude_entries=("/GEMINI.md", "/.gemini/skills/"),
    seeded_paths=("GEMINI.md", ".gemini/skills/**"),
    scrub_patterns=(),
)

SETTINGS = "settings.json"
TRUSTED_FOLDERS = "trustedFolders.json"
MAX_BYTES = 16 * 1024 * 1024
# §6: the events lab's hook writer records into the run's spool.
HOOK_EVENTS = (
    "SessionStart",
    "BeforeAgent",
    "AfterAgent",
    "BeforeTool",
    "AfterTool",
    "Notification",
    "SessionEnd",
)
HOOK_NAME = "lab"
# §12: the values trustedFolders.json holds per folder.
TRUST, DO_NOT_TRUST = "TRUST_FOLDER", "DO_NOT_TRUST"


class ConfigRefused(ProviderError):
    """lab will not edit a Gemini settings file: unreadable, not JSON, or not a regular file."""


def hook_command() -> str:
    """lab's hook writer with no argument: the spool reaches it through the pane's environment
    (providers.hook_writer.SPOOL_ENV), so one user-level setting serves every run. The CLI runs
    it through the shell: quoted, a path with a space stays one word."""
    return shlex.join([sys.executable, "-S", str(Path(__file__).parent.parent / "hook_writer.py")])


@contextlib.contextmanager
def config_lock(gemini_dir: Path) -> Iterator[None]:
    """One writer of lab's grants at a time (two runs starting at once would each read the old
    file and the second write would drop the first's change)."""
    gemini_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(gemini_dir / ".lab-config.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_json(path: Path) -> dict[str, Any]:
    """A settings file lab edits ({} when missing); ConfigRefused when lab cannot read it."""
    try:
        raw = read_regular(path, MAX_BYTES)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigRefused(f"lab will not edit {path}: {exc.strerror}") from None
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        raise ConfigRefused(f"lab will not edit {path}: it is not JSON.") from None
    if not isinstance(data, dict):
        raise ConfigRefused(f"lab will not edit {path}: it is not a JSON object.")
    return data


def install_settings(gemini_dir: Path) -> list[Path]:
    """§6, §9: lab's hook on every event it reads (any earlier lab entry replaced, the
    operator's own hooks kept), the API key as the auth method when none is chosen (else the
    TUI opens on its auth screen), folder trust on (each folder's trust is lab's decision, per
    run), no update check or nag (the pinned version is the verified one)."""
    path = gemini_dir / SETTINGS
    with config_lock(gemini_dir):
        settings = read_json(path)
        hooks = settings.setdefault("hooks", {})
        if not isinstance(hooks, dict):
            raise ConfigRefused(f"lab will not edit {path}: its hooks are not an object.")
        for event in HOOK_EVENTS:
            groups = [g for g in hooks.get(event) or [] if not _is_lab(g)]
            hooks[event] = [
                *groups,
                {"hooks": [{"type": "command", "name": HOOK_NAME, "command": hook_command()}]},
            ]
        security = _table(settings, "security", path)
        auth = _table(security, "auth", path)
        auth.setdefault("selectedType", "gemini-api-key")
        _table(security, "folderTrust", path)["enabled"] = True
        general = _table(settings, "general", path)
        # §9: 0.61.0's names (it rewrites the older disableAutoUpdate/disableUpdateNag to these).
        general["enableAutoUpdate"] = False
        general["enableAutoUpdateNotification"] = False
        write_private(path, json.dumps(settings, indent=2).encode())
    return [path]


def trust_folder(gemini_dir: Path, folder: Path, trusted: bool) -> list[Path]:
    """§9: the folder's entry in trustedFolders.json, as the CLI's trust screen writes it:
    trusted, the CLI loads the folder's own settings; not trusted, it starts without them and
    without asking, but runs no hook either."""
    path = gemini_dir / TRUSTED_FOLDERS
    with config_lock(gemini_dir):
        folders = read_json(path)
        key = os.path.realpath(folder)
        value = TRUST if trusted else DO_NOT_TRUST
        if folders.get(key) == value:
            return []
        folders[key] = value
        write_private(path, json.dumps(folders, indent=2).encode())
    return [path]


def folder_trusted(gemini_dir: Path, folder: Path) -> bool:
    try:
        return read_json(gemini_dir / TRUSTED_FOLDERS).get(os.path.realpath(folder)) == TRUST
    except ConfigRefused:
        return False


def _is_lab(group: object) -> bool:
    return isinstance(group, dict) and any(
        isinstance(h, dict) and h.get("name") == HOOK_NAME for h in group.get("hooks") or []
    )


def _table(parent: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise ConfigRefused(f"lab will not edit {path}: its {key} is not an object.")
    return value
