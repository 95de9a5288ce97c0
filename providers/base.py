"""The provider contract: what every agent-CLI adapter implements.

Mandatory methods live on `AgentProvider`; optional capabilities are runtime-checkable
protocols the generic layer detects with `isinstance` and degrades without (docs/architecture.md,
"Honest degradation"). Obligations that types cannot express are written on the methods and
checked by tests/conformance.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from providers import review
from providers.schema import (
    Answer,
    Attachment,
    AuthFlow,
    AuthStatus,
    CommandSpec,
    Cursor,
    Dialog,
    LoginStart,
    RepositorySetting,
    RunHandle,
    RunState,
    SeedMeta,
    SessionInfo,
    SpawnOption,
    SpawnResult,
    TranscriptRead,
    Usage,
    WorkspaceChoices,
)


class AgentProvider(abc.ABC):
    id: str

    @abc.abstractmethod
    def display_name(self) -> str:
        """The name every user-facing string uses ("<name> needs input")."""

    @abc.abstractmethod
    def auth_flow(self) -> AuthFlow: ...

    @abc.abstractmethod
    def seed_meta(self) -> SeedMeta: ...

    @abc.abstractmethod
    def commands(self, worktree: Path) -> list[CommandSpec]:
        """Every command the CLI offers in this worktree, honestly marked chat_safe or not.
        Names are unique; at most one row carries CommandRole.CLEAR."""

    @abc.abstractmethod
    def spawn_options(self) -> list[SpawnOption]: ...

    @abc.abstractmethod
    def spawn(self, run: RunHandle, options: Mapping[str, str]) -> SpawnResult:
        """Start the real TUI in run.tmux_session on run.tmux_socket, in run.worktree, with
        run.env added to the process environment (the generic layer's commit guard needs it).
        The transcript path must be known on return, before the first line is written.

        Obligation (repository trust): unless run.trusted, none of the repository's own agent
        settings (repository_settings) takes effect: the CLI starts with them not loaded, and may
        then accept its own folder prompt on the operator's behalf. Where the CLI has no way to
        start without settings the worktree holds, raise SpawnFailed saying which and why."""

    @abc.abstractmethod
    def repository_settings(self, checkout: Path) -> list[RepositorySetting]:
        """What the checkout's own files would make this CLI do once trusted: hooks and their
        commands, key helpers, environment overrides (redirects=True for a model endpoint or a
        credential), permission allow rules, MCP servers, shell policies. Reads files only,
        never runs anything; a file it cannot read or parse is itself a row (its content is
        unknown, so it may hold anything). [] when the checkout holds none."""

    @abc.abstractmethod
    def repository_trusted(self, repository: Path) -> bool:
        """Whether the CLI's own record trusts the repository, given as its main checkout, as
        when the operator accepted the CLI's folder prompt there."""

    @abc.abstractmethod
    def trust_repository(self, repository: Path) -> list[Path]:
        """Record the operator's trust in the repository (given as its main checkout) where the
        CLI records it, so it lasts and holds in every worktree of it. Idempotent; returns the
        files written."""

    @abc.abstractmethod
    def seed_workspace(self, worktree: Path, choices: WorkspaceChoices | None = None) -> list[Path]:
        """The CLI's own grants for a worktree (trust and the like) and the operator's choices
        (attribution, the repository's MCP servers), applied the CLI's way; None means the
        defaults of WorkspaceChoices. Idempotent. Returns the files written."""

    @abc.abstractmethod
    def locate_transcript(self, run: RunHandle) -> str:
        """The current transcript. Obligation (clear/epoch): when the CLI clears its context,
        this returns a new identity (a new path, or an epoch-qualified one), and reading it
        from an empty cursor restarts seq at 0."""

    @abc.abstractmethod
    def read_transcript(self, path: str, cursor: Cursor) -> TranscriptRead:
        """Messages appended since `cursor`. Never re-reads what the cursor covers; holds back a
        partial last line; a corrupt line is skipped and surfaced as a lifecycle warning.
        May stop at a byte budget: callers read again until the cursor stops moving.
        Incremental reads concatenated equal one whole read."""

    def review_message(self, comments: Sequence[review.Comment]) -> str:
        """The operator's diff comments as one message for this CLI (Markdown by default)."""
        return review.markdown(comments)

    @abc.abstractmethod
    def reply(self, run: RunHandle, text: str, *, again: bool = False) -> None:
        """Deliver text as the operator's next message. Legal while working (best effort).
        Raises before sending: InvalidReply (cannot be sent), ReplyRefused (would act on the TUI:
        PromptPending while it asks something, or a mode prefix), StillStarting (input not live
        yet). ReplyNotDelivered if the CLI did not record it, saying only what is known.
        Never sends a second copy of a text whose first may still land, unless `again`
        (ReplyInFlight); never loses the text silently."""

    @abc.abstractmethod
    def interrupt(self, run: RunHandle) -> None:
        """Stop the current turn. The recipe is hazard-checked: it never quits the CLI or
        opens another UI when the turn has already ended. A key that would answer what the CLI
        asks (a permission prompt, a question) is not sent: PromptPending. The check and the
        key are made under providers.outbox.keys_lock, which answer_dialog's keys take too."""

    @abc.abstractmethod
    def answer_dialog(self, run: RunHandle, dialog: Dialog, answers: Sequence[Answer]) -> None:
        """answers[i] answers dialog.all_questions[i]; an empty `answers` declines the dialog.
        Records the intent for the backstop (compare the recorded result, warn on mismatch).
        Under providers.outbox.keys_lock, after any settle wait and right before the first key,
        the dialog is read again: gone, changed, or dismissed by an interrupt sent since it
        appeared (providers.outbox.last_interrupt_ns) raises StaleDialog, nothing sent. A result
        recorded for the dialog that is not the answer sent is not its success."""

    @abc.abstractmethod
    def auth_status(self) -> AuthStatus: ...

    @abc.abstractmethod
    def login_start(self) -> LoginStart: ...

    @abc.abstractmethod
    def login_code(self, code: str) -> AuthStatus: ...

    @abc.abstractmethod
    def logout(self) -> AuthStatus: ...


@runtime_checkable
class LiveSignals(Protocol):
    """A structured live channel beside the transcript (Claude Code: hooks into a spool).

    Each method answers from what the provider reads itself, at the time of the call: no
    ordering with read_transcript, and nothing learnt from another caller. lab calls these from
    any worker, often one that has not read the transcript (a page load, an answer's re-check),
    so a channel the transcript has to complete (a decline that gets no closing hook) reads the
    transcript itself.

    What a watcher relies on to skip them (live/watcher.py, LIVE_RECHECK_S): their answers, and
    locate_transcript's, change only with a file event in the run's spool dir or beside the
    transcript (any entry but the transcript itself), except that an append to the transcript
    may close what they report open; the sweep may wait a few seconds. Within one wake (and one
    page's view) the calls share one look at the spool (providers/hookspool.py, one_look): the
    spool read through spool_signature and spool_events is as the wake first saw it, and what
    lands after is the next wake's, which it causes."""

    def pending_dialog(self, run: RunHandle) -> Dialog | None: ...

    def blocked_state(self, run: RunHandle) -> RunState | None: ...

    def sweep(self, run: RunHandle) -> None: ...


@runtime_checkable
class SideTranscripts(Protocol):
    """Side conversations the run's transcript names (Message.side): a background agent's own
    transcript, read with read_transcript like the run's."""

    def side_transcript(self, run: RunHandle, side: str) -> str:
        """The path of side conversation `side` of the run's current transcript, or "" when
        there is none (an id the adapter does not know, a file that is not there)."""
        ...


@runtime_checkable
class PromptReturner(Protocol):
    """A way back to the CLI's prompt from a screen lab does not drive (a help screen, an
    unknown picker), without the operator attaching to the terminal."""

    def at_prompt(self, run: RunHandle) -> bool | None:
        """Whether the TUI shows its prompt now; None when it cannot tell. No keys, no wait."""
        ...

    def return_to_prompt(self, run: RunHandle) -> bool | None:
        """Hazard-checked keys (never one that could answer a prompt, interrupt a turn or open
        another screen at the prompt), then whether the prompt is back (verified, bounded);
        None when it cannot tell (and then it sends nothing)."""
        ...


@runtime_checkable
class ConnectingReporter(Protocol):
    def connecting(self, run: RunHandle) -> bool:
        """True from spawn until the CLI's session has started (the page shows "starting").
        Called on every watcher wake: cheap, no subprocess, no wait."""
        ...


@runtime_checkable
class UsageReporter(Protocol):
    """The run's context fill and the account's quota, as the CLI last reported them."""

    def usage(self, run: RunHandle) -> Usage | None:
        """What the CLI last reported (a field it never reported stays None), or None when it
        has reported nothing yet. Called on page loads and watcher wakes: cheap, no subprocess,
        a bounded read."""


@runtime_checkable
class TakesAttachments(Protocol):
    """Files sent with a message the way the CLI takes them (Claude Code and Codex: a pasted
    image path becomes the CLI's own image input, `[Image #N]`; another file is named in the
    text, and the agent reads it)."""

    def reply_with_attachments(
        self, run: RunHandle, text: str, attachments: Sequence[Attachment], *, again: bool = False
    ) -> None:
        """reply(), with `attachments` (saved in run.worktree) going in order before the text.
        The same refusals before any key; ReplyNotDelivered when the CLI's record of the message
        lacks an image it was given, naming it. `text` may be empty when there are attachments."""
        ...


# The spawn option a resume passes: the session id, from sessions() (ResumesSessions).
RESUME_OPTION = "resume"


@runtime_checkable
class ResumesSessions(Protocol):
    """The CLI's own earlier conversations in a worktree (Claude Code: its project folder of
    transcripts), each resumable: spawn() with options[RESUME_OPTION] = its id starts the CLI on
    it, and the run's transcript shows the whole earlier history."""

    def sessions(self, worktree: Path) -> list[SessionInfo]:
        """The worktree's sessions, newest first. Reads files only, bounded."""
        ...
