"""Live: the catalog is the `/` popup of the pinned CLI as lab runs it (folder trust on), every
name in it and nothing else (compat/gemini/COMPAT.md §8). The test reads its own probe's pane."""

from __future__ import annotations

import re
import time

import pytest

from providers.tmux import Tmux

pytestmark = pytest.mark.live

ROW = re.compile(r"^ ([a-z][a-z-]+) {2,}\S")


def test_the_catalog_is_the_popup(gemini_rig):
    run = gemini_rig.start()
    run.provider.wait_ready(run.handle, Tmux(run.handle.tmux_socket))
    tmux = Tmux(run.handle.tmux_socket)
    tmux.paste(run.handle.tmux_session, "/")
    seen: set[str] = set()
    total = None
    for _ in range(80):
        time.sleep(0.15)
        pane = run.pane()
        seen |= {m.group(1) for line in pane.splitlines() if (m := ROW.match(line))}
        if total is None and (found := re.search(r"\((\d+)/(\d+)\)", pane)):
            total = int(found.group(2))
        if total is not None and len(seen) >= total:
            break
        tmux.send_keys(run.handle.tmux_session, "Down")
    catalog = {c.name for c in run.provider.commands(gemini_rig.worktree)}
    assert total == len(seen), f"the popup says {total} rows, lab read {sorted(seen)}"
    assert seen == catalog, (sorted(seen - catalog), sorted(catalog - seen))
