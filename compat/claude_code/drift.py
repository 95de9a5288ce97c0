"""How the CLI under test differs from what lab pins, as short one-line reports.

A live test that finds drift fails with a message starting "drift", so `make compat-check`
names what moved in its table instead of pasting a list comparison.
"""

from __future__ import annotations

import re

from providers.claude_code.commands import Pinned


def norm(text: str) -> str:
    return " ".join(text.split())


def catalog_drift(pinned: tuple[Pinned, ...], seen: list[tuple[str, str]]) -> list[str]:
    """Every way the menu differs from a pinned table, one short line each: a command added,
    gone or moved, a description changed. Empty when they agree."""
    pins = {p.name: p for p in pinned}
    shown = dict(seen)
    drift = [f"new /{name} ({desc!r})" for name, desc in seen if name not in pins]
    drift += [f"gone /{name}" for name in pins if name not in shown]
    common_pinned = [name for name in pins if name in shown]
    common_seen = [name for name, _ in seen if name in pins]
    if common_pinned != common_seen:
        moved = [a for a, b in zip(common_pinned, common_seen, strict=True) if a != b]
        drift.append(f"order changed from /{moved[0]}")
    for name in common_seen:
        pin, desc = pins[name], shown[name]
        if pin.tui_pattern:  # compat §10: state-bearing descriptions are pinned state-free
            if not re.fullmatch(pin.tui_pattern, desc):
                drift.append(f"/{name} description {desc!r} does not match {pin.tui_pattern!r}")
        elif norm(desc) != norm(pin.description):
            drift.append(f"/{name} description: pinned {pin.description!r}, the CLI shows {desc!r}")
    return drift
