"""The operator's diff comments, sent to the agent as one message. No Django.

Comments go in one batch: one at a time, an agent swings back and forth between them. Each
names its place as `path:line` (or `path:first-last`), quotes the diff lines it is about, and
says the comment. Markdown reads well to both CLIs today; a provider whose CLI wants another
shape overrides AgentProvider.review_message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_COMMENTS = 100
MAX_CODE_LINES = 200
MAX_TEXT_CHARS = 10_000


class InvalidReview(ValueError):
    """The comments cannot be sent as they are; the message says why."""


@dataclass(frozen=True)
class Comment:
    path: str
    start: int
    end: int
    old: bool  # the lines are removed ones: numbers are the old file's
    code: tuple[str, ...]  # the diff lines, each with its sign (+, -, space)
    text: str

    @property
    def place(self) -> str:
        lines = f"{self.start}" if self.start == self.end else f"{self.start}-{self.end}"
        return f"{self.path}:{lines}" + (" (removed lines; old file)" if self.old else "")


def parse(items: object) -> list[Comment]:
    """Comments from the page's JSON, checked: bad input is refused whole, with the reason."""
    if not isinstance(items, list) or not items:
        raise InvalidReview("There are no comments to send.")
    if len(items) > MAX_COMMENTS:
        raise InvalidReview(f"At most {MAX_COMMENTS} comments go in one message.")
    out = []
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise InvalidReview(f"Comment {n} is not a comment.")
        path, text, code = item.get("path"), item.get("text"), item.get("code", [])
        start, end = item.get("start"), item.get("end")
        if not isinstance(path, str) or not path or "\n" in path:
            raise InvalidReview(f"Comment {n} has no file.")
        if not isinstance(text, str) or not text.strip():
            raise InvalidReview(f"Comment {n} on {path} is empty: write it or remove it.")
        if len(text) > MAX_TEXT_CHARS or "\0" in text:
            raise InvalidReview(f"Comment {n} on {path} is too long or holds a NUL character.")
        if not (isinstance(start, int) and isinstance(end, int) and 0 < start <= end):
            raise InvalidReview(f"Comment {n} on {path} has no line.")
        if not isinstance(code, list) or not all(isinstance(c, str) for c in code):
            raise InvalidReview(f"Comment {n} on {path} has unreadable code lines.")
        out.append(
            Comment(path, start, end, bool(item.get("old")), tuple(code[:MAX_CODE_LINES]), text.strip())
        )
    return out


def _fence(code: Sequence[str]) -> str:
    # Longer than any run of backticks in the code, so the code cannot close it.
    longest = max((len(m) for line in code for m in re.findall(r"`+", line)), default=0)
    return "`" * max(3, longest + 1)


def markdown(comments: Sequence[Comment]) -> str:
    n = len(comments)
    parts = [f"Review comments on your changes ({n}). Please address {'each' if n > 1 else 'it'}:"]
    for i, c in enumerate(comments, 1):
        block = f"{i}. `{c.place}`"
        if c.code:
            fence = _fence(c.code)
            block += f"\n{fence}diff\n" + "\n".join(c.code) + f"\n{fence}"
        parts.append(block + f"\n{c.text}")
    return "\n\n".join(parts)
