"""Prepare a private HOME so the real Claude Code TUI starts offline with no first-run dialog."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PINNED_VERSION = "2.1.328"


def claude_binary() -> Path:
    """The native ``claude`` binary installed by ``npm install`` in the repo root.

    ``node_modules/.bin/claude`` links to ``@anthropic-ai/claude-code/bin/claude.exe`` (the
    native ELF); the platform package holds the same binary.
    """
    nm = REPO_ROOT / "node_modules"
    candidates = [
        nm / ".bin" / "claude",
        nm / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe",
        *sorted((nm / "@anthropic-ai").glob("claude-code-linux-*/claude")),
    ]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            real = c.resolve()
            with open(real, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    return real
    raise FileNotFoundError(f"claude binary not found under {nm} (run `npm install` in {REPO_ROOT})")


def project_dir_name(cwd: Path | str) -> str:
    """``~/.claude/projects/<name>``: the adapter's own rule (compat §1), one place."""
    from providers.claude_code.provider import project_dir_name as adapter_rule

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
        "lastOnboardingVersion": PINNED_VERSION,
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
