"""A private HOME + CODEX_HOME so the real Codex TUI starts offline on the scripted model with no
first-run screen (folder trust, hooks review, model notice) holding it."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "@openai/codex"
FIXTURES_ROOT = Path(__file__).resolve().parent / "fixtures"

# The id of the custom model provider in config.toml, the model name it serves and the
# variable that carries its key (Codex sends it as "authorization: Bearer <key>").
PROVIDER_ID = "lab_scripted"
MODEL = "gpt-scripted"
KEY_ENV = "LAB_SCRIPTED_OPENAI_KEY"

# The lifecycle events Codex 0.171.0 lists in /hooks (Stop included), each with the name its
# trust key uses.
HOOK_EVENTS = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool_use",
    "Stop": "stop",
}


def pinned_version() -> str:
    """The Codex version lab pins: package.json is the one place it is written."""
    return str(json.loads((REPO_ROOT / "package.json").read_text())["dependencies"][PACKAGE])


PINNED_VERSION = pinned_version()


def fixtures_dir(version: str = PINNED_VERSION) -> Path:
    """``compat/codex/fixtures/<version>/``: the rollouts captured live from that version."""
    return FIXTURES_ROOT / version


def _native_beside(path: Path) -> list[Path]:
    """The native binaries an npm install of ``@openai/codex`` holds, given any file in it (the
    ``bin/codex.js`` shim that ``.bin/codex`` links to, or the native binary itself)."""
    real = path.resolve()
    for root in real.parents:
        if root.name == "codex" and root.parent.name == "@openai":
            return sorted(root.parent.glob("codex-linux-*/vendor/*/bin/codex")) + sorted(
                root.glob("vendor/*/bin/codex")
            )
    return [real]


def launcher_dir() -> Path:
    """The folder lab starts ``codex`` from, as ``make run`` does: ``$LAB_AGENT_BIN_DIR`` when
    set, else the npm install's ``node_modules/.bin``, whose ``codex`` is the node shim. The shim
    stays the TUI's parent, so tests of lab's adapter start it through here, never the native
    binary directly."""
    bin_dir = os.environ.get("LAB_AGENT_BIN_DIR")
    return Path(bin_dir) if bin_dir else REPO_ROOT / "node_modules" / ".bin"


def codex_binary() -> Path:
    """The native ``codex`` binary under test: from ``$LAB_AGENT_BIN_DIR/codex`` when set (lab's
    own setting), else from the ``npm ci`` install in the repo root. ``.bin/codex`` is a node
    shim (``bin/codex.js``) that execs the native binary of the platform package; spawning that
    binary directly leaves no node process between tmux and the TUI."""
    bin_dir = os.environ.get("LAB_AGENT_BIN_DIR")
    entry = (
        Path(bin_dir) / "codex"
        if bin_dir
        else REPO_ROOT / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"
    )
    for c in _native_beside(entry) if entry.exists() else []:
        real = c.resolve()
        if real.is_file() and os.access(real, os.X_OK):
            with open(real, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    return real
    raise FileNotFoundError(f"codex binary not found from {entry} (run `npm ci` in {REPO_ROOT})")


def installed_version(binary: Path | None = None) -> str:
    """The version of the package that holds ``binary`` (the native binary, or the ``.bin/codex``
    shim that leads to it), read from the ``codex-package.json`` next to the native one: no need
    to run it."""
    for native in _native_beside(binary or codex_binary()):
        for folder in native.resolve().parents:
            manifest = folder / "codex-package.json"
            if manifest.is_file():
                return str(json.loads(manifest.read_text())["version"])
    raise FileNotFoundError(f"no codex-package.json beside {binary}")


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a TOML basic string is a JSON string for the text lab writes


def hook_trust_hash(event_snake: str, command: str, *, matcher: str | None = None, timeout: int = 600) -> str:
    """The ``trusted_hash`` Codex 0.171.0 stores for one command hook: the sha256 of the hook's
    identity as compact JSON with sorted keys, Codex's defaults filled in (timeout 600, async
    false) and an unset matcher left out. Verified against the hashes the TUI wrote when
    "Trust all and continue" was picked (compat/codex/tests/test_home.py)."""
    identity: dict[str, Any] = {
        "event_name": event_snake,
        "hooks": [{"async": False, "command": command, "timeout": timeout, "type": "command"}],
    }
    if matcher is not None:
        identity["matcher"] = matcher
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


def hooks_trust_toml(hooks_json: Path, hooks: dict[str, Any]) -> str:
    """``[hooks.state."<hooks.json>:<event_snake>:<group>:<handler>"] trusted_hash = "sha256:…"``
    for every command handler in ``hooks`` (the ``{"hooks": {...}}`` document), as Codex writes
    it when the operator picks "Trust all and continue" on its "Hooks need review" screen."""
    out = []
    for event, groups in hooks.get("hooks", {}).items():
        snake = HOOK_EVENTS.get(event) or re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()
        for gi, group in enumerate(groups):
            for hi, handler in enumerate(group.get("hooks", [])):
                key = f"{hooks_json}:{snake}:{gi}:{hi}"
                digest = hook_trust_hash(
                    snake,
                    handler["command"],
                    matcher=group.get("matcher"),
                    timeout=handler.get("timeout", 600),
                )
                out.append(f"[hooks.state.{_toml_str(key)}]\ntrusted_hash = {_toml_str(digest)}\n")
    return "\n".join(out)


def config_toml(
    worktree: Path,
    base_url: str,
    *,
    approval_policy: str = "on-request",
    sandbox_mode: str = "workspace-write",
    trust_worktree: bool = True,
    extra: str = "",
    max_retries: int | None = None,
) -> str:
    """config.toml: the scripted model as a custom Responses-API provider, the worktree trusted
    (``trust_worktree=False`` leaves it out, for the probe of the trust screen), no update
    check, no telemetry. ``max_retries`` caps the provider's request and stream retries (a probe
    of a failing model then ends in seconds, not Codex's default back-off)."""
    retries = (
        f"request_max_retries = {max_retries}\nstream_max_retries = {max_retries}\n"
        if max_retries is not None
        else ""
    )
    trust = f'[projects.{_toml_str(str(worktree))}]\ntrust_level = "trusted"\n\n' if trust_worktree else ""
    return (
        f"model = {_toml_str(MODEL)}\n"
        f"model_provider = {_toml_str(PROVIDER_ID)}\n"
        f"approval_policy = {_toml_str(approval_policy)}\n"
        f"sandbox_mode = {_toml_str(sandbox_mode)}\n"
        "check_for_update_on_startup = false\n"
        "\n"
        f"[model_providers.{PROVIDER_ID}]\n"
        'name = "lab scripted model"\n'
        f"base_url = {_toml_str(base_url)}\n"
        'wire_api = "responses"\n'
        f"env_key = {_toml_str(KEY_ENV)}\n"
        f"{retries}"
        "\n"
        f"{trust}"
        "[analytics]\nenabled = false\n"
        "\n"
        "[tui]\nscreen_reader_detection_done = true\n"
        "\n"
        "[tui.model_availability_nux]\n"
        '"gpt-6.1-sol" = 1\n' + (("\n" + extra) if extra else "")
    )


def prepare_home(
    home: Path,
    worktree: Path,
    base_url: str,
    *,
    api_key: str = "sk-scripted-test",
    hooks: dict[str, Any] | None = None,
    approval_policy: str = "on-request",
    trust_worktree: bool = True,
    trust_hooks: bool = True,
    max_retries: int | None = None,
) -> dict[str, str]:
    """Write ``home/.codex/config.toml`` (+ ``hooks.json`` with its trust when ``hooks`` is given)
    and return the environment for codex: complete, not merged with os.environ. The ``trust_*``
    switches leave a trust out, for the probes of the screens it prevents."""
    home = Path(home)
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    extra = ""
    if hooks is not None:
        hooks_path = codex_home / "hooks.json"
        hooks_path.write_text(json.dumps(hooks, indent=2))
        extra = hooks_trust_toml(hooks_path, hooks) if trust_hooks else ""
    (codex_home / "config.toml").write_text(
        config_toml(
            Path(worktree),
            base_url,
            approval_policy=approval_policy,
            trust_worktree=trust_worktree,
            extra=extra,
            max_retries=max_retries,
        )
    )
    return {
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "TERM": "xterm-256color",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        KEY_ENV: api_key,
    }
