"""Prepare a private HOME so the real Claude Code TUI starts offline with no first-run dialog."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from compat.live import make_worktree

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "@anthropic-ai/claude-code"
FIXTURES_ROOT = Path(__file__).resolve().parent / "fixtures"


def pinned_version() -> str:
    """The Claude Code version lab pins. package.json is the one place it is written: the
    onboarding keys, the fixtures folder and the pin test all derive from it."""
    return str(json.loads((REPO_ROOT / "package.json").read_text())["dependencies"][PACKAGE])


PINNED_VERSION = pinned_version()


def fixtures_dir(version: str = PINNED_VERSION) -> Path:
    """``compat/claude_code/fixtures/<version>/``: the transcripts captured live from that version."""
    return FIXTURES_ROOT / version


def fixture_versions() -> list[str]:
    """Every version with captured fixtures, oldest first: transcripts written by an older CLI
    stay readable after an upgrade, so the reader tests walk them all."""
    dirs = [d for d in FIXTURES_ROOT.iterdir() if d.is_dir() and any(d.glob("*.jsonl"))]
    return [d.name for d in sorted(dirs, key=lambda d: tuple(int(n) for n in d.name.split(".")))]


def fixture_paths() -> list[Path]:
    """Every captured transcript of every version, oldest version first."""
    return [p for v in fixture_versions() for p in sorted(fixtures_dir(v).glob("*.jsonl"))]


def claude_binary() -> Path:
    """The native ``claude`` binary under test: ``$LAB_AGENT_BIN_DIR/claude`` when set (lab's own
    setting; ``make compat-check`` points it at a scratch install), else the one ``npm ci``
    installed in the repo root.

    ``node_modules/.bin/claude`` links to ``@anthropic-ai/claude-code/bin/claude.exe`` (the
    native ELF); the platform package holds the same binary.
    """
    nm = REPO_ROOT / "node_modules"
    bin_dir = os.environ.get("LAB_AGENT_BIN_DIR")
    candidates = (
        [Path(bin_dir) / "claude"]
        if bin_dir
        else [
            nm / ".bin" / "claude",
            nm / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe",
            *sorted((nm / "@anthropic-ai").glob("claude-code-linux-*/claude")),
        ]
    )
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            real = c.resolve()
            with open(real, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    return real
    where = bin_dir or nm
    raise FileNotFoundError(f"claude binary not found under {where} (run `npm ci` in {REPO_ROOT})")


def installed_version(binary: Path | None = None) -> str:
    """The version of the package that holds ``binary`` (default: the one under test), read from
    its own package.json: no need to run it."""
    real = (binary or claude_binary()).resolve()
    for folder in real.parents:
        manifest = folder / "package.json"
        if manifest.is_file():
            meta = json.loads(manifest.read_text())
            if str(meta.get("name", "")).startswith(PACKAGE):
                return str(meta["version"])
    raise FileNotFoundError(f"no {PACKAGE} package.json above {real}")


def project_dir_name(cwd: Path | str) -> str:
    """``~/.claude/projects/<name>``: the adapter's own rule (compat §1), one place."""
    from providers.claude_code.transcript import project_dir_name as adapter_rule

    return adapter_rule(str(cwd))


def transcript_path(home: Path, cwd: Path | str, session_id: str) -> Path:
    return Path(home) / ".claude" / "projects" / project_dir_name(cwd) / f"{session_id}.jsonl"


def prepare_home(
    home: Path,
    worktree: Path,
    api_key: str = "sk-ant-test",
    base_url: str | None = None,
    settings: dict | None = None,
) -> dict[str, str]:
    """Write ``home/.claude.json`` (+ ``.claude/settings.json``) and return the env for claude.

    ``base_url`` (the scripted model's url) sets ANTHROPIC_BASE_URL when given.
    The returned dict is a complete environment (not merged with os.environ) except PATH/TERM/LANG.
    """
    home = Path(home)
    worktree = Path(worktree)
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        # The version under test, so no "what's new" screen holds the start.
        "lastOnboardingVersion": installed_version(),
        "numStartups": 1,
        "installMethod": "local",
        "autoUpdates": False,
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "projects": {
            str(worktree): {
                "hasTrustDialogAccepted": True,
                "hasCompletedProjectOnboarding": True,
                "projectOnboardingSeenCount": 1,
                "allowedTools": [],
            }
        },
    }
    (home / ".claude.json").write_text(json.dumps(state, indent=2))
    if settings is not None:
        (home / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "TERM": "xterm-256color",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "ANTHROPIC_API_KEY": api_key,
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    }
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    if shutil.which("git", path=env["PATH"]) is None:  # pragma: no cover
        raise RuntimeError("git not on PATH")
    return env


@dataclass(frozen=True)
class ClaudeHome:
    home: Path
    worktree: Path
    env: dict[str, str]


def private_home(root: Path, base_url: str) -> ClaudeHome:
    """``root/home`` prepared for an offline start against ``base_url`` (the scripted model) and
    a fresh worktree ``root/wt`` (a git repository with one commit)."""
    home = root / "home"
    wt = make_worktree(root / "wt")
    # A key of its own: a test can look for exactly this value in every process on the machine.
    key = f"sk-ant-test-{uuid.uuid4().hex}"
    return ClaudeHome(home, wt, prepare_home(home, wt, api_key=key, base_url=base_url))
