"""Stand-in providers for the auth views: one per AuthFlow kind the card renders.

The registry caches one instance per (id, dotted path), so a test configures the instance it
gets from `get_provider` (fields below) and the conftest clears the cache around each test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from providers.base import AgentProvider
from providers.errors import InvalidCode
from providers.schema import (
    Answer,
    AuthFlow,
    AuthFlowKind,
    AuthStatus,
    CommandSpec,
    Cursor,
    Dialog,
    LoginStart,
    RepositorySetting,
    RunHandle,
    SeedMeta,
    SpawnOption,
    SpawnResult,
    TranscriptRead,
    WorkspaceChoices,
)

LOGIN_URL = "https://sign-in.example.invalid/authorize?state=s1"
LOCAL_URL = "https://sign-in.example.invalid/authorize?redirect_uri=http%3A%2F%2Flocalhost%3A4567%2Fcallback"
ACCOUNT = "operator@example.invalid"


class _NotARunner(AgentProvider):
    """Everything but auth is out of scope for these tests."""

    id = "stub"

    def display_name(self) -> str:
        return "Stub Agent"

    def auth_flow(self) -> AuthFlow:
        return AuthFlow(kind=AuthFlowKind.EXTERNAL)

    def seed_meta(self) -> SeedMeta:
        raise NotImplementedError

    def commands(self, worktree: Path) -> list[CommandSpec]:
        raise NotImplementedError

    def spawn_options(self) -> list[SpawnOption]:
        return []

    def spawn(self, run: RunHandle, options: Mapping[str, str]) -> SpawnResult:
        raise NotImplementedError

    def seed_workspace(self, worktree: Path, choices: WorkspaceChoices | None = None) -> list[Path]:
        raise NotImplementedError

    def repository_settings(self, checkout: Path) -> list[RepositorySetting]:
        raise NotImplementedError

    def repository_trusted(self, repository: Path) -> bool:
        raise NotImplementedError

    def trust_repository(self, repository: Path) -> list[Path]:
        raise NotImplementedError

    def locate_transcript(self, run: RunHandle) -> str:
        raise NotImplementedError

    def read_transcript(self, path: str, cursor: Cursor) -> TranscriptRead:
        raise NotImplementedError

    def reply(self, run: RunHandle, text: str, *, again: bool = False) -> None:
        raise NotImplementedError

    def interrupt(self, run: RunHandle) -> None:
        raise NotImplementedError

    def answer_dialog(self, run: RunHandle, dialog: Dialog, answers: Sequence[Answer]) -> None:
        raise NotImplementedError

    def auth_status(self) -> AuthStatus:
        return AuthStatus(logged_in=True, method="external", account="")

    def login_start(self) -> LoginStart:
        raise NotImplementedError

    def login_code(self, code: str) -> AuthStatus:
        raise NotImplementedError

    def logout(self) -> AuthStatus:
        raise NotImplementedError


class StubOAuthProvider(_NotARunner):
    """oauth-code: a login is pending after login_start and takes one code."""

    id = "fake"

    def __init__(self) -> None:
        self.logged_in = False
        self.pending = False
        self.codes: list[str] = []
        self.error: Exception | None = None  # raised by the next auth verb

    def display_name(self) -> str:
        return "Fake Agent"

    def auth_flow(self) -> AuthFlow:
        return AuthFlow(kind=AuthFlowKind.OAUTH_CODE, instructions="Open the link and paste the code.")

    def auth_status(self) -> AuthStatus:
        if self.logged_in:
            return AuthStatus(logged_in=True, method="oauth", account=ACCOUNT)
        return AuthStatus(logged_in=False)

    def _raise(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def login_start(self) -> LoginStart:
        self._raise()
        self.pending = True
        return LoginStart(
            url=LOGIN_URL, alternatives=(("From this machine, open the local link.", LOCAL_URL),)
        )

    def login_code(self, code: str) -> AuthStatus:
        self.codes.append(code)
        self._raise()
        if not self.pending:
            raise InvalidCode("No login is waiting for a code.")
        self.pending, self.logged_in = False, True
        return self.auth_status()

    def logout(self) -> AuthStatus:
        self._raise()
        self.pending = self.logged_in = False
        return self.auth_status()


class StubApiKeyProvider(_NotARunner):
    id = "keyed"

    def display_name(self) -> str:
        return "Keyed Agent"

    def auth_flow(self) -> AuthFlow:
        return AuthFlow(
            kind=AuthFlowKind.API_KEY,
            instructions="Set the key in lab's agent environment and restart lab.",
            credential_name="KEYED_API_KEY",
        )

    def auth_status(self) -> AuthStatus:
        return AuthStatus(logged_in=False, detail="No key is set.")


class StubExternalProvider(_NotARunner):
    id = "ext"

    def display_name(self) -> str:
        return "Outside Agent"
