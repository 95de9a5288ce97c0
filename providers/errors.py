"""Typed errors every provider raises and the generic layer maps to messages and statuses.

They live in the seam, not in an adapter, so views catch them without importing a concrete
provider.
"""

from __future__ import annotations

from dataclasses import dataclass


class ProviderError(Exception):
    """Base class: the message is safe to show the operator."""


class UnknownProvider(ProviderError):
    pass


class InvalidReply(ProviderError):
    """The text cannot be sent (too long, empty after sanitizing, a newline where none is allowed)."""


class ReplyNotDelivered(ProviderError):
    """The text was sent but the CLI did not record it within the bound. The message says only
    what the provider knows (it may still land); the caller keeps the draft."""


class ReplyRefused(ProviderError):
    """Nothing was sent: sending the text now would act on the TUI in a way the operator did not
    ask for (answer a prompt on screen, run a shell command, open a screen lab cannot drive)."""


class PromptPending(ReplyRefused):
    """The CLI is asking something (a permission, a question): keys sent now would answer it."""


class ReplyInFlight(ReplyRefused):
    """The same text was sent before and may still land (it was not recorded yet), or another
    message to the run is being sent right now: a second copy could land twice."""


class StillStarting(ProviderError):
    """The CLI's input is not live yet; nothing was sent."""


class DialogNotAnswerable(ProviderError):
    """The answer does not fit the pending dialog, or this provider cannot answer this kind."""


class StaleDialog(DialogNotAnswerable):
    """The dialog the answer was for is no longer the pending one."""


class SessionGone(ProviderError):
    """The run's terminal session no longer exists."""


class SpawnFailed(ProviderError):
    pass


class InvalidCode(ProviderError):
    """A login code that is malformed, refused, or sent when no login is pending."""


class LoginTimeout(ProviderError):
    pass


class LoginFailed(ProviderError):
    pass


class TranscriptUnreadable(ProviderError):
    """The transcript path is not a regular file lab may read (a symlink, a FIFO, a directory)."""


# --- what each error means for the page --------------------------------------------------------
# One table, read by every view that catches a ProviderError (runs and auth_flows): the same error
# gets the same status whichever button asked. It is plain data (no Django) beside the types, so
# a new error type gets its row in the same edit, and it sits below both apps that read it.


@dataclass(frozen=True, slots=True)
class Outcome:
    """How lab answers an error. Every error keeps what the operator typed (the composer's
    draft, the dialog's answer form or the login code form is rendered again with it)."""

    status: int  # the HTTP status
    kind: str  # its machine-readable name, for JSON answers
    fix_input: bool = False  # the input does not fit: the same form comes back to be fixed
    send_again: bool = False  # the composer offers "send again" (a second copy only on purpose)


OUTCOMES: dict[type[ProviderError], Outcome] = {
    ProviderError: Outcome(502, "provider_error"),
    UnknownProvider: Outcome(404, "unknown_provider"),
    InvalidReply: Outcome(422, "invalid_reply", fix_input=True),
    ReplyNotDelivered: Outcome(502, "reply_not_delivered"),
    ReplyRefused: Outcome(409, "reply_refused"),
    PromptPending: Outcome(409, "prompt_pending"),
    ReplyInFlight: Outcome(409, "reply_in_flight", send_again=True),
    StillStarting: Outcome(409, "still_starting"),
    DialogNotAnswerable: Outcome(422, "dialog_not_answerable", fix_input=True),
    StaleDialog: Outcome(409, "stale_dialog"),
    SessionGone: Outcome(409, "session_gone"),
    SpawnFailed: Outcome(502, "spawn_failed"),
    InvalidCode: Outcome(400, "invalid_code", fix_input=True),
    LoginTimeout: Outcome(504, "login_timeout"),
    LoginFailed: Outcome(502, "login_failed"),
    TranscriptUnreadable: Outcome(502, "transcript_unreadable"),
}


def outcome(exc: ProviderError) -> Outcome:
    """The row of the error's own type, else of its nearest listed ancestor (an adapter's own
    subclass answers as the seam type it refines)."""
    for cls in type(exc).__mro__:
        if cls in OUTCOMES:
            return OUTCOMES[cls]
    return OUTCOMES[ProviderError]
