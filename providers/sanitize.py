"""Text on its way into a TUI: nothing in it may act as a key.

ESC, C0 controls (except tab and newline) and C1 controls are removed, so a pasted
bracketed-paste terminator (ESC [ 201 ~) followed by a command can never leave the paste.
Carriage returns, and the Unicode line and paragraph separators (U+2028, U+2029), become
newlines first, so CRLF text keeps its line breaks and a "single line" cannot hide one.
"""

from __future__ import annotations

import re

from providers.errors import InvalidReply

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
_LINE_BREAK = re.compile(r"\r\n|[\r\u2028\u2029]")


def sanitize_text(text: str, *, max_bytes: int) -> str:
    given = text
    text = _CONTROL.sub("", _LINE_BREAK.sub("\n", text))
    if len(text.encode()) > max_bytes:
        raise InvalidReply(f"The text is longer than {max_bytes} bytes.")
    if not text.strip():
        if given.strip():
            raise InvalidReply(
                "The text has only control characters, which are removed: nothing is left to send."
            )
        raise InvalidReply("The text is empty.")
    return text


def sanitize_line(text: str, *, max_bytes: int) -> str:
    """A single-line answer (free text, plan feedback): a newline would submit it early."""
    if "\n" in text or _LINE_BREAK.search(text):
        raise InvalidReply("This answer must fit on one line.")
    return sanitize_text(text, max_bytes=max_bytes).strip()
