"""Typed errors every provider raises and the generic layer maps to messages and statuses.

They live in the seam, not in an adapter, so views catch them without importing a concrete
provider.
"""


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
