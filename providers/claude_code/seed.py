"""Claude Code's seeding: what the generic seeder writes (SEED_META) and the CLI's own grants
(seed_workspace: the first-run state and the worktree's trust in ~/.claude.json; the operator's
attribution and MCP choices in the worktree's .claude/settings.local.json).

Facts pinned in compat/claude_code/COMPAT-seeding.md (CLI 2.1.328).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import Any

from providers import safegit
from providers.errors import ProviderError
from providers.safefile import UnsafeFile, open_regular, pread_upto, read_head
from providers.schema import ProjectServers, SeedMeta, WorkspaceChoices

SEED_META = SeedMeta(
    # COMPAT-seeding §2: the project CLAUDE.md at the worktree root reaches the model.
    context_file="CLAUDE.md",
    # COMPAT-seeding §3: project skills are read from .claude/skills/<name>/SKILL.md.
    skills_dir=".claude/skills",
    # Anchored to the root. A tracked CLAUDE.md or skill is unaffected (exclude never hides a
    # tracked file) and the seeder skips it rather than edit it.
    # COMPAT-seeding §4/§5: the operator's choices live in the worktree's local settings file.
    exclude_entries=("/CLAUDE.md", "/.claude/skills/", "/.claude/settings.local.json"),
    seeded_paths=("CLAUDE.md", ".claude/skills/**", ".claude/settings.local.json"),
    # Applied per line (re.MULTILINE) by lab's commit guard to the agent's commit messages when
    # attribution is off (COMPAT-seeding §6); PR bodies rely on the CLI's own setting (§4).
    scrub_patterns=(
        r"^Co-Authored-By: Claude.*$",
        r"^🤖 Generated with \[Claude Code\].*$",
    ),
)

CONFIG_NAME = ".claude.json"
BACKUP_SUFFIX = ".lab-backup"
# COMPAT-seeding §1: the keys that let 2.1.328 start in a folder without the trust dialog.
TRUST_KEYS = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
# COMPAT-seeding §7: without this top-level key 2.1.328 runs its onboarding (theme, sign-in,
# a reachability check of api.anthropic.com that exits at once when it fails) before the prompt.
ONBOARDING_KEYS = {"hasCompletedOnboarding": True}
# COMPAT-seeding §7: an ANTHROPIC_API_KEY whose last 20 characters are not in
# customApiKeyResponses.approved holds the TUI on "Detected a custom API key … Do you want to use
# this API key?", with "No (recommended)" highlighted.
API_KEY_RESPONSES = "customApiKeyResponses"
API_KEY_TAIL = 20
_RETRIES = 5
CONFIG_MAX_BYTES = 64 * 1024 * 1024  # the CLI's own state file; far larger is not one lab edits
LOCAL_SETTINGS = ".claude/settings.local.json"
# COMPAT-seeding §4: with this value the CLI drops both attribution lines from what it tells the
# model (verified live: no "Co-Authored-By" and no "Generated with" in the request).
NO_ATTRIBUTION = {"commit": "", "pr": ""}
# COMPAT-seeding §5: the lists the CLI checks before it starts a .mcp.json server; a server in
# neither list holds the TUI on a "New MCP server found" prompt at start.
MCP_LISTS = {
    ProjectServers.APPROVE: ("enabledMcpjsonServers", "disabledMcpjsonServers"),
    ProjectServers.REJECT: ("disabledMcpjsonServers", "enabledMcpjsonServers"),
}


DEFAULTS = WorkspaceChoices()


class ConfigRefused(ProviderError):
    """lab will not write a CLI config or settings file: it is not a JSON object, it kept
    changing, it is a symlink, or the repository tracks it."""


def seed_workspace(
    worktree: Path, *, home: Path, choices: WorkspaceChoices = DEFAULTS, api_key: str | None = None
) -> list[Path]:
    """The first-run state and the trust grant in <home>/.claude.json, then the operator's
    choices in the worktree's .claude/settings.local.json. Nothing else is granted (no hooks, no
    permission bypass). `api_key` is the ANTHROPIC_API_KEY lab passes the agent, if the operator
    configured one: only that key is approved. Idempotent: returns [] when everything is
    already in place, else the files written."""
    return [*_grant_first_run(worktree, home, api_key), *_apply_choices(worktree, choices)]


def _grant_first_run(worktree: Path, home: Path, api_key: str | None) -> list[Path]:
    """Onboarding done, `api_key` approved (when given), and `worktree` (its realpath, the key
    the CLI looks up) trusted: the three first-run screens of COMPAT-seeding §7 and §1.

    The folder's trust skips the CLI's prompt only: what the repository's settings may do is
    the operator's decision (trust_repository, for the main checkout), and until it is made
    the run starts with them not loaded (Process.spawn). Touches only hasCompletedOnboarding,
    customApiKeyResponses (the key's tail added to approved, removed from rejected) and
    projects[<realpath>].{hasTrustDialogAccepted, hasCompletedProjectOnboarding}; every other
    key is preserved. Returns the files written (the config, and the one-generation backup the
    first time lab changes an existing file).
    """
    return _update_config(home, [os.path.realpath(worktree)], api_key)


def trust_repository(repository: Path, *, home: Path) -> list[Path]:
    """COMPAT-seeding §7: the CLI's own record of trust in a repository is its main checkout's
    projects entry; a linked worktree of a trusted main checkout loads the committed settings
    without asking again."""
    main = _main_checkout(Path(os.path.realpath(repository))) or os.path.realpath(repository)
    return _update_config(home, [main], None, onboarding=False)


def repository_trusted(repository: Path, *, home: Path) -> bool:
    main = _main_checkout(Path(os.path.realpath(repository))) or os.path.realpath(repository)
    config = Path(os.path.realpath(Path(home) / CONFIG_NAME))
    try:
        state = _parse(_read(config)[0], config)
    except ConfigRefused:
        return False
    projects = state.get("projects")
    entry = projects.get(main) if isinstance(projects, dict) else None
    return isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True


def _update_config(
    home: Path, keys: list[str], api_key: str | None, *, onboarding: bool = True
) -> list[Path]:
    # Write through a symlinked config (dotfile managers) instead of replacing the link.
    config = Path(os.path.realpath(Path(home) / CONFIG_NAME))
    for _ in range(_RETRIES):
        raw, fingerprint = _read(config)
        state = _parse(raw, config)
        changed = [onboarding and _grant_onboarding(state), _grant_api_key(state, api_key)]
        changed += [_grant(state, key) for key in keys]
        if not any(changed):
            return []
        written = _backup(config, raw)
        if _replace_if_unchanged(config, state, fingerprint):
            return [*written, config]
    # The CLI rewrites this file while it runs; a file that never holds still is left alone.
    raise ConfigRefused(f"{config} kept changing while lab tried to update it; try again.")


def _apply_choices(worktree: Path, choices: WorkspaceChoices) -> list[Path]:
    """Attribution and the repository's MCP servers, in the CLI's local (never committed)
    settings file of this worktree. Keys the operator or the CLI put there are kept."""
    root = Path(os.path.realpath(worktree))
    path = root / LOCAL_SETTINGS
    _refuse_links(root, path)
    raw, _ = _read(path)
    state = _parse(raw, path)
    if not _choose(state, choices, project_servers(root)):
        return []
    if _tracked(root, LOCAL_SETTINGS):
        raise ConfigRefused(
            f"{LOCAL_SETTINGS} is tracked by the repository and lab never edits committed files; "
            "set the attribution and MCP choices in it yourself."
        )
    # No backup file here: it would sit in the work tree, and lab only sets its own keys.
    _atomic_write(path, (json.dumps(state, indent=2, ensure_ascii=False) + "\n").encode(), like=path)
    return [path]


def _choose(state: dict[str, Any], choices: WorkspaceChoices, servers: list[str]) -> bool:
    """Apply the choices to the settings in place; False when nothing changed."""
    before = json.dumps(state, sort_keys=True)
    current = state.get("attribution")
    if not choices.attribution:
        state["attribution"] = {**(current if isinstance(current, dict) else {}), **NO_ATTRIBUTION}
    elif current == NO_ATTRIBUTION:
        del state["attribution"]  # lab's own earlier "off"; the CLI's default is on
    if servers:
        keep, drop = MCP_LISTS[choices.project_servers]
        for name, values in ((keep, servers), (drop, [])):
            existing = state.get(name, [])
            if not isinstance(existing, list):
                raise ConfigRefused(f"{LOCAL_SETTINGS}: {name} is not a list; lab leaves it alone.")
            kept = [v for v in existing if v not in servers]
            state[name] = kept + values
            if not state[name]:
                del state[name]
    return json.dumps(state, sort_keys=True) != before


def project_servers(root: Path) -> list[str]:
    """The server names of the repository's .mcp.json (COMPAT-seeding §5); [] when there is
    none or the CLI could not read it either."""
    try:
        servers = json.loads(read_head(root / ".mcp.json", 1 << 20)).get("mcpServers")
    except (OSError, ValueError, AttributeError):
        return []
    return sorted(k for k in servers if isinstance(k, str)) if isinstance(servers, dict) else []


def _refuse_links(root: Path, path: Path) -> None:
    """The settings file and its directory must be what they look like: no symlink (even one
    pointing inside), no directory where the file should be."""
    for p, kind in ((path.parent, stat.S_ISDIR), (path, stat.S_ISREG)):
        try:
            mode = os.lstat(p).st_mode
        except FileNotFoundError:
            return
        if not kind(mode):
            where = p.relative_to(root)
            raise ConfigRefused(f"{where} is a symlink or not a regular entry; lab leaves it alone.")


def _tracked(root: Path, rel: str) -> bool:
    try:
        cp = safegit.run("ls-files", "--error-unmatch", "--", f":(literal){rel}", cwd=root)
    except safegit.GitTimeout as exc:  # unknown is not "untracked": lab would edit a committed file
        raise ConfigRefused(f"{exc} It was asked whether {rel} is tracked; lab leaves it alone.") from None
    return cp.returncode == 0


def _read(config: Path) -> tuple[bytes | None, tuple[int, int, int] | None]:
    try:
        # Already resolved (a symlinked config is written through), so following is harmless;
        # a FIFO or device there must not hang the run's start.
        with open_regular(config, follow=True) as (fd, st):
            if st.st_size > CONFIG_MAX_BYTES:
                raise ConfigRefused(f"{config} is over {CONFIG_MAX_BYTES >> 20} MB; lab leaves it alone.")
            return pread_upto(fd, CONFIG_MAX_BYTES, 0), (st.st_ino, st.st_size, st.st_mtime_ns)
    except FileNotFoundError:
        return None, None
    except UnsafeFile as exc:
        raise ConfigRefused(f"{config} {exc.strerror}; lab leaves it alone.") from None


def _parse(raw: bytes | None, config: Path) -> dict[str, Any]:
    if raw is None or not raw.strip():
        return {}
    try:
        state = json.loads(raw)
    except ValueError:
        raise ConfigRefused(f"{config} is not valid JSON; lab leaves it alone.") from None
    if not isinstance(state, dict):
        raise ConfigRefused(f"{config} is not a JSON object; lab leaves it alone.")
    return state


def _main_checkout(worktree: Path) -> str | None:
    """The main work tree of the repository `worktree` belongs to (realpath); None outside
    git or for a bare repository."""
    if not worktree.is_dir():  # no such folder (yet): nothing to look up
        return None
    try:
        cp = safegit.run("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=worktree)
    except safegit.GitTimeout:
        return None
    common = Path(safegit.path(cp.stdout).strip())
    if cp.returncode != 0 or common.name != ".git":
        return None
    return os.path.realpath(common.parent)


def _grant_onboarding(state: dict[str, Any]) -> bool:
    if all(state.get(k) == v for k, v in ONBOARDING_KEYS.items()):
        return False
    state.update(ONBOARDING_KEYS)
    return True


def _grant_api_key(state: dict[str, Any], api_key: str | None) -> bool:
    """Approve the key the operator gave lab for its agents (its tail, as the CLI stores it).
    The operator configured it for exactly this use, so an earlier "No" in this home is
    replaced; any other key's answer is left as it is."""
    if not api_key:
        return False
    tail = api_key[-API_KEY_TAIL:]
    responses = state.setdefault(API_KEY_RESPONSES, {})
    if not isinstance(responses, dict):
        raise ConfigRefused(f"The CLI config's {API_KEY_RESPONSES!r} is not an object; lab leaves it alone.")
    approved, rejected = responses.setdefault("approved", []), responses.setdefault("rejected", [])
    if not isinstance(approved, list) or not isinstance(rejected, list):
        raise ConfigRefused(f"The CLI config's {API_KEY_RESPONSES!r} holds no lists; lab leaves it alone.")
    if tail in approved and tail not in rejected:
        return False
    if tail not in approved:
        approved.append(tail)
    responses["rejected"] = [r for r in rejected if r != tail]
    return True


def _grant(state: dict[str, Any], key: str) -> bool:
    """Add the trust keys in place; False if they were all there already."""
    projects = state.setdefault("projects", {})
    if not isinstance(projects, dict):
        raise ConfigRefused("The CLI config's 'projects' is not an object; lab leaves it alone.")
    entry = projects.setdefault(key, {})
    if not isinstance(entry, dict):
        raise ConfigRefused(f"The CLI config's entry for {key} is not an object; lab leaves it alone.")
    if all(entry.get(k) == v for k, v in TRUST_KEYS.items()):
        return False
    entry.update(TRUST_KEYS)
    return True


def _backup(config: Path, raw: bytes | None) -> list[Path]:
    """One generation: the config as it was before lab first changed it, never overwritten."""
    backup = config.with_name(config.name + BACKUP_SUFFIX)
    if raw is None or backup.exists():
        return []
    _atomic_write(backup, raw, like=config)
    return [backup]


def _replace_if_unchanged(
    config: Path, state: dict[str, Any], fingerprint: tuple[int, int, int] | None
) -> bool:
    # The CLI writes the same file; re-check just before the rename so lab never replaces a
    # version it did not read (the window left is the rename itself).
    data = (json.dumps(state, indent=2, ensure_ascii=False) + "\n").encode()
    if _read(config)[1] != fingerprint:
        return False
    _atomic_write(config, data, like=config)
    return True


def _atomic_write(path: Path, data: bytes, *, like: Path) -> None:
    """Temp file in the same dir, fsync, rename; the mode of `like` (0600 when new: it can hold
    an API key's tail and OAuth account data)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.lab-tmp-{secrets.token_hex(4)}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileNotFoundError):
            shutil.copymode(like, tmp)
        tmp.replace(path)
        _fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# COMPAT-seeding §8: with --setting-sources user the CLAUDE.md of the working directory is not
# read; of a directory given with --add-dir it is, when this is set.
UNTRUSTED_ENV = {"CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD": "1"}


def untrusted_args(cwd: str) -> list[str]:
    """COMPAT-seeding §8: only the user's settings load, so none of the repository's (its
    hooks, key helper, environment, permission rules, MCP approvals) takes effect; the
    worktree added as a directory brings its CLAUDE.md back (UNTRUSTED_ENV)."""
    return ["--setting-sources", "user", "--add-dir", cwd]


def untrusted_settings(worktree: Path, choices: WorkspaceChoices) -> dict[str, object]:
    """The operator's choices for a run whose local settings file is not loaded: attribution
    as chosen, and every server the repository's .mcp.json declares disabled (an untrusted
    repository's servers never start, whatever the choice)."""
    out: dict[str, object] = {"enableAllProjectMcpServers": False}
    if servers := project_servers(worktree):
        out["disabledMcpjsonServers"] = servers
    if not choices.attribution:
        out["attribution"] = dict(NO_ATTRIBUTION)
    return out


STATUS_SETTINGS = ".claude/settings.json"


def operator_status_line(home: Path, worktree: Path, *, trusted: bool) -> dict[str, Any] | None:
    """The status line the operator's own settings give the CLI (compat §16), which lab's
    inline statusLine would otherwise replace: the worktree's local then project settings (only
    when the run loads the repository's settings) over the user's. None when none sets one."""
    root = Path(os.path.realpath(worktree))
    candidates = [root / LOCAL_SETTINGS, root / STATUS_SETTINGS] if trusted else []
    for path in [*candidates, Path(home) / STATUS_SETTINGS]:
        try:
            data = json.loads(read_head(path, 1 << 20))
        except (OSError, ValueError, UnsafeFile):
            continue
        line = data.get("statusLine") if isinstance(data, dict) else None
        if isinstance(line, dict) and line.get("type") == "command" and isinstance(line.get("command"), str):
            return line
    return None
