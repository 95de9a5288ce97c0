"""A private home for Gemini CLI so the real TUI starts offline on the scripted model with no
first-run screen (folder trust, auth method) holding it, and where the pin is read."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "@google/gemini-cli"
FIXTURES_ROOT = Path(__file__).resolve().parent / "fixtures"
# A model pinned in the settings: with the default ("Auto") every prompt first asks a
# classifier which model to use (the scripted model answers that too, §1).
MODEL = "gemini-2.5-flash"


def pinned_version() -> str:
    """The version lab pins: package.json is the one place it is written."""
    return str(json.loads((REPO_ROOT / "package.json").read_text())["dependencies"][PACKAGE])


PINNED_VERSION = pinned_version()


def fixtures_dir(version: str = PINNED_VERSION) -> Path:
    return FIXTURES_ROOT / version


def launcher_dir() -> Path:
    """The folder lab starts ``gemini`` from, as ``make run`` does: ``$LAB_AGENT_BIN_DIR`` when
    set, else the npm install's ``node_modules/.bin``."""
    bin_dir = os.environ.get("LAB_AGENT_BIN_DIR")
    return Path(bin_dir) if bin_dir else REPO_ROOT / "node_modules" / ".bin"


def gemini_binary() -> Path:
    path = launcher_dir() / "gemini"
    if not path.exists():
        raise FileNotFoundError(f"gemini not found in {launcher_dir()} (run `npm ci` in {REPO_ROOT})")
    return path


def installed_version(binary: Path | None = None) -> str:
    """The version of the package that holds ``binary`` (the .bin link to bundle/gemini.js)."""
    real = (binary or gemini_binary()).resolve()
    for folder in real.parents:
        manifest = folder / "package.json"
        if manifest.is_file():
            data = json.loads(manifest.read_text())
            if data.get("name") == PACKAGE:
                return str(data["version"])
    raise FileNotFoundError(f"no {PACKAGE} package.json above {real}")


def settings_json(*, model: str = MODEL, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The user settings a fresh home needs to reach the prompt: the API key as auth method, a
    pinned model, no usage statistics, no update check."""
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "model": {"name": model},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        **(extra or {}),
    }


def prepare_home(
    home: Path, base_url: str, *, api_key: str = "scripted-test-key", **kw: Any
) -> dict[str, str]:
    """Write ``home/.gemini/settings.json`` and return the environment for gemini: complete,
    not merged with os.environ."""
    gemini_dir = Path(home) / ".gemini"
    gemini_dir.mkdir(parents=True, exist_ok=True)
    (gemini_dir / "settings.json").write_text(json.dumps(settings_json(**kw), indent=2))
    return {
        "HOME": str(home),
        "GEMINI_CLI_HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "TERM": "xterm-256color",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "GEMINI_API_KEY": api_key,
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }
