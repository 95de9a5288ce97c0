"""Codex's seeding: what the generic seeder writes (SEED_META) and the CLI's own grants in lab's
CODEX_HOME (seed_workspace: the worktree's trust and the trust of lab's own hooks, written the
way Codex 0.171.0 writes them when the operator accepts its screens).

No Django. Facts pinned in compat/codex/COMPAT-adapter.md §9.
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import hashlib
import json
import os
import shlex
import sys
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from providers.errors import ProviderError
from providers.safefile import UnsafeFile, read_regular
from providers.schema import SeedMeta

SEED_META = SeedMeta(
    # §9: Codex reads AGENTS.md at the project root into its instructions.
    context_file="AGENTS.md",
    # §9: project skills are read from .agents/skills/<name>/SKILL.md ("<skills_instructions>").
    skills_dir=".agents/skills",
    exclude_entries=("/AGENTS.md", "/.agents/skills/"),
    seeded_paths=("AGENTS.md", ".agents/skills/**"),
    # §9: 0.171.0 tells the model to add no attribution line; nothing to scrub.
    scrub_patterns=(),
)

CONFIG = "config.toml"
HOOKS = "hooks.json"
CONFIG_MAX_BYTES = 16 * 1024 * 1024  # a config or hooks file lab edits; a larger one is refused
# §6: the events lab's hook writes into the run's spool. PreToolUse/PostToolUse/
# PermissionRequest take a matcher; the others none.
HOOK_EVENTS = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PreToolUse": "*",
    "PermissionRequest": "*",
    "PostToolUse": "*",
    "Stop": None,
}
# §6: Codex fills these defaults into the handler before hashing it.
HOOK_DEFAULT_TIMEOUT = 600


class ConfigRefused(ProviderError):
    """lab will not edit a Codex config file: unreadable, not TOML/JSON, or a symlink."""


def hook_command() -> str:
    """lab's hook writer, with no argument: the spool directory reaches it through the agent's
    environment (providers.hook_writer.SPOOL_ENV), so the command, and with it the trust hash,
    is one fixed string for every run. Codex runs it through the shell: quoted, a path with a
    space stays one word."""
    return shlex.join([sys.executable, "-S", str(Path(__file__).parent.parent / "hook_writer.py")])


@contextlib.contextmanager
def config_lock(codex_home: Path) -> Iterator[None]:
    """One writer of lab's grants at a time (two runs starting at once would each read the old
    config.toml and the second write would drop the first's trust)."""
    codex_home.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(codex_home / ".lab-config.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# compat §14: what 0.171.0's `[shell_environment_policy]` does to the environment of an
# `exec_command` shell. `inherit = "core"` keeps only these names; `ignore_default_excludes`
# defaults to true (a `*KEY*` name reaches the shell), false drops these patterns. Patterns are
# globs matched without regard to case.
SHELL_CORE_VARS = frozenset({"HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP"})
SHELL_DEFAULT_EXCLUDES = ("*KEY*", "*SECRET*", "*TOKEN*")


def _matches(name: str, patterns: list[Any]) -> bool:
    return any(isinstance(p, str) and fnmatch.fnmatchcase(name.upper(), p.upper()) for p in patterns)


def shell_policy_drops(codex_home: Path, names: Iterable[str]) -> tuple[list[str], str]:
    """The names of `names` that the operator's `[shell_environment_policy]` in config.toml keeps
    from (or overrides in) the agent's shell, and the setting that does it. ([], "") when every
    one reaches it, which is the case with no policy at all (compat §14).

    The policy of the profile config.toml selects (`profile = "<name>"`) is checked too, as if
    it stood alone: how 0.171.0 merges a profile's policy with the top-level one was not
    observed, so a drop by either refuses the run rather than guess."""
    try:
        config = tomllib.loads(_read(codex_home / CONFIG))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigRefused(f"{codex_home / CONFIG} is not TOML: {exc}") from None
    return config_policy_drops(config, names)


def config_policy_drops(config: dict[str, Any], names: Iterable[str]) -> tuple[list[str], str]:
    """shell_policy_drops for one parsed config.toml (the operator's, or a trusted
    repository's .codex/config.toml, which Codex layers over it)."""
    wanted = sorted(names)
    policies = [("shell_environment_policy", config.get("shell_environment_policy", {}))]
    profile = config.get("profile")
    profiles = config.get("profiles", {})
    selected = profiles.get(profile) if isinstance(profile, str) and isinstance(profiles, dict) else None
    if isinstance(selected, dict) and "shell_environment_policy" in selected:
        policies.append(
            (f"profiles.{profile}.shell_environment_policy", selected["shell_environment_policy"])
        )
    for where, policy in policies:
        dropped, setting = _policy_drops(policy, wanted)
        if dropped:
            return dropped, f"{where}{setting}"
    return [], ""


def _policy_drops(policy: object, wanted: list[str]) -> tuple[list[str], str]:
    """What one `[shell_environment_policy]` table drops of `wanted`, and the key (".exclude")."""
    if not isinstance(policy, dict):
        return wanted, " (not a table)"
    rules: list[tuple[str, Any]] = []
    inherit = policy.get("inherit", "all")
    if inherit != "all":
        rules.append((f".inherit = {inherit!r}", lambda n: inherit != "core" or n not in SHELL_CORE_VARS))
    if policy.get("ignore_default_excludes", True) is not True:
        rules.append(
            (".ignore_default_excludes = false", lambda n: _matches(n, list(SHELL_DEFAULT_EXCLUDES)))
        )
    exclude = policy.get("exclude", [])
    rules.append((".exclude", lambda n: _matches(n, exclude if isinstance(exclude, list) else ["*"])))
    overrides = policy.get("set", {})
    rules.append((".set", lambda n: not isinstance(overrides, dict) or n in overrides))
    include_only = policy.get("include_only", [])
    if include_only:
        only = include_only if isinstance(include_only, list) else []
        rules.append((".include_only", lambda n: not _matches(n, only)))
    for setting, drops in rules:
        dropped = [n for n in wanted if drops(n)]
        if dropped:
            return dropped, setting
    return [], ""


def snake(event: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in event).lstrip("_")


def hook_trust_hash(event: str, matcher: str | None, command: str) -> str:
    """§6: sha256 over the compact, key-sorted JSON of the hook's normalized identity
    (reproduced from the hashes 0.171.0 wrote when "Trust all and continue" was chosen)."""
    identity: dict[str, Any] = {"event_name": snake(event)}
    if matcher is not None:
        identity["matcher"] = matcher
    identity["hooks"] = [
        {"async": False, "command": command, "timeout": HOOK_DEFAULT_TIMEOUT, "type": "command"}
    ]
    canonical = json.dumps(identity, separators=(",", ":"), sort_keys=True)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def _read(path: Path) -> str:
    try:
        return read_regular(path, CONFIG_MAX_BYTES).decode("utf-8")
    except FileNotFoundError:
        return ""
    except UnsafeFile as exc:  # a symlink, a FIFO (which would hang the start), a huge file
        raise ConfigRefused(f"lab does not edit {path}: it {exc.strerror}.") from None
    except UnicodeDecodeError:
        raise ConfigRefused(f"lab does not edit {path}: it is not UTF-8.") from None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.lab-tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _toml_key(text: str) -> str:
    return json.dumps(text)  # a TOML basic string is a JSON string for these paths


def install_hooks(codex_home: Path) -> list[Path]:
    """lab's hook in <CODEX_HOME>/hooks.json (the operator's own hooks kept), and its trust in
    config.toml. Idempotent: returns the files it changed."""
    with config_lock(codex_home):
        return _install_hooks(codex_home)


def _install_hooks(codex_home: Path) -> list[Path]:
    hooks_path = codex_home / HOOKS
    raw = _read(hooks_path)
    try:
        data = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigRefused(f"{hooks_path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.setdefault("hooks", {}), dict):
        raise ConfigRefused(f"{hooks_path} is not a hooks object.")
    command = hook_command()
    changed = False
    trust: dict[str, str] = {}
    for event, matcher in HOOK_EVENTS.items():
        groups = data["hooks"].setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigRefused(f"{hooks_path}: {event} is not a list.")
        index = next(
            (
                i
                for i, g in enumerate(groups)
                if isinstance(g, dict) and [h.get("command") for h in g.get("hooks", [])] == [command]
            ),
            None,
        )
        legacy = next((i for i, g in enumerate(groups) if _lab_legacy_group(g)), None)
        if index is None and legacy is not None:
            # The hook writer lab installed before (a file since removed): pointed at the
            # current one in place, so its index, and the trust key on it, stay.
            groups[legacy]["hooks"][0]["command"] = command
            index, changed = legacy, True
        if index is None:
            group: dict[str, Any] = {"hooks": [{"type": "command", "command": command}]}
            if matcher is not None:
                group = {"matcher": matcher, **group}
            groups.append(group)
            index = len(groups) - 1
            changed = True
        trust[f"{hooks_path}:{snake(event)}:{index}:0"] = hook_trust_hash(event, matcher, command)
    written = []
    if changed:
        _write(hooks_path, json.dumps(data, indent=2) + "\n")
        written.append(hooks_path)
    if _trust(codex_home / CONFIG, hooks=trust):
        written.append(codex_home / CONFIG)
    return written


# The hook writer's path in earlier versions of lab: its groups are lab's, rewritten on install.
LEGACY_HOOK_SCRIPT = ("providers", "codex", "hook_spool.py")


def _lab_legacy_group(group: object) -> bool:
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list) or len(group["hooks"]) != 1:
        return False
    handler = group["hooks"][0]
    command = handler.get("command") if isinstance(handler, dict) else None
    try:
        argv = shlex.split(command) if isinstance(command, str) else []
    except ValueError:
        return False
    return len(argv) == 3 and argv[1] == "-S" and Path(argv[2]).parts[-3:] == LEGACY_HOOK_SCRIPT


def trust_project(codex_home: Path, worktree: Path) -> list[Path]:
    """§9: `[projects."<worktree>"] trust_level = "trusted"`, as Codex writes it when its
    folder-trust screen is accepted (then the screen is skipped)."""
    path = codex_home / CONFIG
    with config_lock(codex_home):
        return [path] if _trust(path, project=os.path.realpath(worktree)) else []


def _trust(path: Path, *, project: str = "", hooks: dict[str, str] | None = None) -> bool:
    text = _read(path)
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigRefused(f"{path} is not TOML: {exc}") from None
    additions: list[str] = []
    if project:
        entry = config.get("projects", {}).get(project)
        if entry is None:
            additions.append(f'[projects.{_toml_key(project)}]\ntrust_level = "trusted"\n')
        elif entry.get("trust_level") != "trusted":
            # An explicit decision against this folder (the operator's): lab does not override it.
            raise ConfigRefused(
                f"{path} marks {project} as {entry.get('trust_level')!r}: lab leaves that alone."
            )
    state = config.get("hooks", {}).get("state", {})
    for key, digest in (hooks or {}).items():
        current = state.get(key)
        if current is None:
            additions.append(f'[hooks.state.{_toml_key(key)}]\ntrusted_hash = "{digest}"\n')
        elif current.get("trusted_hash") != digest:
            raise ConfigRefused(f"{path} trusts another hook under {key}: lab leaves that alone.")
    if not additions:
        return False
    lead = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    new = text + lead + "\n".join(additions)
    tomllib.loads(new)  # never leave Codex a config it cannot read
    _write(path, new)
    return True
