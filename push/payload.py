"""What one push says (no Django): the run's name, the kind of event and one short line, the
run's address for the click, and a tag shared with the tab's own notification (static/lab/
feed.js) so the two replace each other instead of showing twice."""

from __future__ import annotations

import json
from dataclasses import dataclass

# What lab pushes: the feed's notification kinds (live/feed.py). A stale question is worse
# than none, so a push service keeps an undelivered one this long at most (RFC 8030 TTL).
KINDS = ("question", "needs_input", "limit", "finished")
TEXT_MAX = 120
# RFC 8030 Urgency: a run that waits for the operator may wake a phone; a finished turn may wait
# for the device's next wake.
URGENCY = {"question": "high", "needs_input": "high", "limit": "normal", "finished": "normal"}


@dataclass(frozen=True)
class Push:
    run_id: int
    name: str
    kind: str
    text: str  # one line: the question's first line, or "" (never transcript content)
    url: str  # the run's page

    @property
    def tag(self) -> str:
        """The notification's tag (the tab's toast for the same run and kind has it too); also
        the RFC 8030 Topic, so a push service replaces an undelivered one instead of queueing."""
        return f"lab-run-{self.run_id}-{self.kind}"

    @property
    def target(self) -> str:
        """Where a click goes: the run, at its dialog when it asks."""
        return self.url if self.kind in ("finished", "limit") else self.url + "#dialog"

    def body(self) -> str:
        text = " ".join(self.text.split()[:60])
        if len(text) > TEXT_MAX:
            text = text[: TEXT_MAX - 1] + "…"
        return json.dumps(
            {
                "run": self.run_id,
                "name": self.name[:200],
                "kind": self.kind,
                "text": text,
                "url": self.url,
                "target": self.target,
                "tag": self.tag,
            },
            ensure_ascii=False,
        )

    def headers(self) -> dict[str, str]:
        headers = {"Urgency": URGENCY.get(self.kind, "normal")}
        if len(self.tag) <= 32:  # RFC 8030 5.4: at most 32 base64url characters
            headers["Topic"] = self.tag
        return headers


def first_line(text: str) -> str:
    """The first non-blank line of `text`."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
