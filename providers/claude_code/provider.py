"""The Claude Code adapter: the only code in lab that knows Claude Code exists.

Every CLI fact used here is pinned in compat/claude_code/COMPAT.md and cites its section. The class is
built by concern, each a floor on the one below: process.py (the binary, its environment, the
spawn) < reading.py (locating and reading transcripts, the backstop's intents) < signals.py
(the live channel) < replying.py (input: reply, interrupt, back to the prompt) and
answering.py (dialog answers). This file adds the declarations and the auth verbs.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from providers.claude_code import auth, seed, trust
from providers.claude_code.answering import Answering
from providers.claude_code.commands import command_catalog
from providers.claude_code.replying import Replying
from providers.schema import (
    AuthFlow,
    AuthFlowKind,
    AuthStatus,
    CommandSpec,
    LoginStart,
    RepositorySetting,
    SeedMeta,
    SpawnOption,
    WorkspaceChoices,
)


class ClaudeCodeProvider(Replying, Answering):
    id = "claude-code"

    # --- declarations ----------------------------------------------------------------------

    def display_name(self) -> str:
        return "Claude Code"

    def auth_flow(self) -> AuthFlow:
        return AuthFlow(
            kind=AuthFlowKind.OAUTH_CODE,
            instructions=("Open the link, sign in, and paste the code the page shows you back here."),
            credential_name="ANTHROPIC_API_KEY",
        )

    def seed_meta(self) -> SeedMeta:
        return seed.SEED_META

    def spawn_options(self) -> list[SpawnOption]:
        return [
            SpawnOption(
                name="permission_mode",
                label="Permission mode",
                # compat §4: the --permission-mode choices 2.1.328 accepts (bypass needs a
                # sandbox and is never offered).
                choices=(
                    ("default", "Ask before each action (manual)"),
                    ("acceptEdits", "Accept edits automatically"),
                    ("auto", "Auto mode"),
                    ("plan", "Plan first"),
                ),
                default="default",
                help_text="How the agent asks before acting.",
            ),
            SpawnOption(
                name="model",
                label="Model",
                choices=(
                    ("", "The CLI's default"),
                    ("opus", "Opus"),
                    ("sonnet", "Sonnet"),
                    ("haiku", "Haiku"),
                ),
                default="",
            ),
        ]

    def commands(self, worktree: Path) -> list[CommandSpec]:
        return command_catalog(Path(worktree), home=self.home())

    def seed_workspace(self, worktree: Path, choices: WorkspaceChoices | None = None) -> list[Path]:
        # Only the key lab itself passes the agent (LAB_AGENT_ENV) is approved: never one
        # found anywhere else.
        api_key = settings.LAB_AGENT_ENV.get("ANTHROPIC_API_KEY") or None
        return seed.seed_workspace(
            Path(worktree), home=self.home(), choices=choices or WorkspaceChoices(), api_key=api_key
        )

    # --- repository trust (trust.py; the record in seed.py) ---------------------------------

    def repository_settings(self, checkout: Path) -> list[RepositorySetting]:
        return trust.repository_settings(Path(checkout))

    def repository_trusted(self, repository: Path) -> bool:
        return seed.repository_trusted(Path(repository), home=self.home())

    def trust_repository(self, repository: Path) -> list[Path]:
        return seed.trust_repository(Path(repository), home=self.home())

    # --- auth (auth.py) --------------------------------------------------------------------

    def auth_status(self) -> AuthStatus:
        return auth.auth_status(self)

    def login_start(self) -> LoginStart:
        return auth.login_start(self)

    def login_code(self, code: str) -> AuthStatus:
        return auth.login_code(self, code)

    def logout(self) -> AuthStatus:
        return auth.logout(self)
