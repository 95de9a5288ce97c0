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
    """The text was sent but the CLI did not record it within the bound; it is not lost: the
    caller still has it and shows it back to the operator."""


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
