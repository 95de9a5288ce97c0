"""Claude Code's process: where the binary, its HOME and its transcripts are, and spawning the
TUI in tmux with lab's hooks (compat §4, §8). The first floor of ClaudeCodeProvider: every other
part builds on it."""

from __future__ import annotations

import os
import re
import shlex
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

import orjson
from django.conf import settings

from providers.base import AgentProvider
from providers.claude_code.seed import NO_ATTRIBUTION, project_servers
from providers.errors import SpawnFailed
from providers.schema import RunHandle, SpawnResult, WorkspaceChoices
from providers.tmux import Tmux

# COMPAT-seeding §8: with --setting-sources user the CLAUDE.md of the working directory is not
# read; of a directory given with --add-dir it is, when this is set.
UNTRUSTED_ENV = {"CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD": "1"}


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


def project_dir_name(cwd: str) -> str:
    # compat §1: every non-alphanumeric character of the cwd becomes '-'.
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in cwd)


class Process(AgentProvider):
    """The binary, its environment and the spawn (no state of its own)."""

    def binary(self) -> str:
        return str(Path(settings.LAB_AGENT_BIN_DIR) / "claude")

    def home(self) -> Path:
        return Path(settings.LAB_AGENT_HOME or os.environ.get("HOME", "/root")).expanduser()

    def agent_env(self) -> dict[str, str]:
        env = {
            "HOME": str(self.home()),
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "TERM": "xterm-256color",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "USER": os.environ.get("USER", "root"),
            "SHELL": os.environ.get("SHELL", "/bin/bash"),
            "DISABLE_AUTOUPDATER": "1",  # the pinned version is the verified one
        }
        env.update(settings.LAB_AGENT_ENV)
        return env

    def transcript_root(self) -> Path:
        return self.home() / ".claude" / "projects"

    def spawn(self, run: RunHandle, options: Mapping[str, str]) -> SpawnResult:
        session_id = str(uuid.uuid4())
        cwd = os.path.realpath(run.worktree)
        argv = [self.binary(), "--session-id", session_id]
        mode = options.get("permission_mode", "default")
        allowed = {v for v, _ in self.spawn_options()[0].choices}
        if mode not in allowed:
            raise SpawnFailed(f"Unknown permission mode {mode!r}.")
        # compat §4: the UI's "manual" is --permission-mode manual; the transcript says default.
        argv += ["--permission-mode", "manual" if mode == "default" else mode]
        if model := options.get("model", ""):
            if not re.fullmatch(r"[a-z0-9.\-]{1,64}", model):
                raise SpawnFailed(f"Not a model name: {model!r}.")
            argv += ["--model", model]
        inline: dict[str, object] = {}
        if run.spool_dir:
            Path(run.spool_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
            inline.update(self.hook_settings(run.spool_dir))
        env = {**self.agent_env(), **dict(run.env)}
        if not run.trusted:
            argv += self.untrusted_args(cwd)
            inline.update(untrusted_settings(Path(cwd), run.choices))
            env.update(UNTRUSTED_ENV)
        if inline:
            argv += ["--settings", orjson.dumps(inline).decode()]
        # The environment file goes beside the spool, in the run's private directory.
        env_dir = str(Path(run.spool_dir).parent) if run.spool_dir else None
        Tmux(run.tmux_socket).new_session(run.tmux_session, cwd=cwd, argv=argv, env=env, env_dir=env_dir)
        path = self.transcript_root() / project_dir_name(cwd) / f"{session_id}.jsonl"
        return SpawnResult(session_id=session_id, transcript_path=str(path))

    def untrusted_args(self, cwd: str) -> list[str]:
        """COMPAT-seeding §8: only the user's settings load, so none of the repository's (its
        hooks, key helper, environment, permission rules, MCP approvals) takes effect; the
        worktree added as a directory brings its CLAUDE.md back (UNTRUSTED_ENV)."""
        return ["--setting-sources", "user", "--add-dir", cwd]

    def hook_settings(self, spool_dir: str) -> dict[str, object]:
        """compat §8: --settings takes inline JSON; each hook runs our spool writer."""
        script = Path(__file__).with_name("hook_spool.py")
        command = shlex.join([sys.executable, "-S", str(script), spool_dir])
        hook = [{"hooks": [{"type": "command", "command": command, "timeout": 10}]}]
        matcher_hook = [{"matcher": "*", "hooks": hook[0]["hooks"]}]
        return {
            "hooks": {
                "SessionStart": hook,
                "SessionEnd": hook,
                "UserPromptSubmit": hook,
                "PreToolUse": matcher_hook,
                "PostToolUse": matcher_hook,
                "PermissionRequest": matcher_hook,
                "Notification": hook,
                "Stop": hook,
            }
        }
