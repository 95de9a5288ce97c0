"""What the run pages tell the live pipeline without importing it (live/ stands above runs/).

`poke` is sent after lab itself changed something about a run (a reply, an answer, an
interrupt, an end): the live app's watcher for that run looks again at once (live/watcher.py
listens, connected in live/apps.py). With no live app loaded nothing listens, and nothing else
changes.
"""

from __future__ import annotations

from django.dispatch import Signal

run_changed = Signal()  # keyword: run_id


def poke(run_id: int) -> None:
    """Ask the run's watcher in this process to look now."""
    run_changed.send(sender=None, run_id=run_id)
