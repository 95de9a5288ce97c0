"""The channel-layer groups a lab page joins, and the event that carries a display-only HTML
fragment to it (swapped in by id, hx-swap-oob)."""

from __future__ import annotations

LAB = "lab"  # every open lab page: provider.auth.changed and the like
FEED = "feed"  # every logged-in page: the JSON entries of run states (live/feed.py)
HTML_EVENT = "lab.html"  # {"type": HTML_EVENT, "html": …}: the consumer forwards it as it is
FEED_EVENT = "feed.frame"  # {"type": FEED_EVENT, "text": …}: a JSON text frame for the feed


def run(run_id: int) -> str:
    """The group of one run's pages: told that the run changed, they pull what they lack."""
    return f"run.{run_id}"
