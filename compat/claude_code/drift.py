"""How the CLI under test differs from what lab pins, as short one-line reports.

A live test that finds drift fails with a message starting "drift", so `make compat-check`
names what moved in its table instead of pasting a list comparison.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path

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


# --- the aliases in the binary's own command table ----------------------------------------------

# The bundled JavaScript declares each slash command as an object literal, e.g.
# {type:"local-jsx",name:"exit",aliases:["quit"],get description(){...},...}; the keys come in any
# order, and "aliases" also names fields of unrelated objects (syntax-highlighter languages), so
# only an object whose own "type" is a command type counts.
_ALIASES_KEY = re.compile(rb"aliases:\[")
_COMMAND_TYPES = (b'"local"', b'"local-jsx"', b'"prompt"')
_KEY_AT = re.compile(rb"([A-Za-z_$][\w$]*):")
_STRING = re.compile(rb'"((?:[^"\\]|\\.)*)"')
_OPENERS, _CLOSERS, _QUOTES = b"{[(", b"}])", b"\"'`"
# A command literal is a few hundred bytes; these bound the scans around each "aliases:[".
_BACK_LIMIT, _FORWARD_LIMIT = 4000, 20000


def _object_start(data: bytes | memoryview, at: int) -> int | None:
    """Where the object literal enclosing ``at`` opens, walking back over balanced brackets and
    quoted strings; None when ``at`` sits in an array or call rather than an object."""
    depth, i, stop = 0, at - 1, max(0, at - _BACK_LIMIT)
    while i >= stop:
        c = data[i]
        if c in _QUOTES:
            i -= 1
            while i >= stop and not (data[i] == c and data[i - 1] != 0x5C):
                i -= 1
        elif c in _CLOSERS:
            depth += 1
        elif c in _OPENERS:
            if depth == 0:
                return i if c == 0x7B else None
            depth -= 1
        i -= 1
    return None


def _own_keys(data: bytes | memoryview, start: int) -> dict[str, bytes]:
    """The object literal at ``start``: its own keys and each one's raw value text."""
    keys: dict[str, bytes] = {}
    depth, i, seg, end = 0, start, start + 1, min(len(data), start + _FORWARD_LIMIT)

    def take(upto: int) -> None:
        part = bytes(data[seg:upto])
        m = _KEY_AT.match(part)
        if m:
            keys[m.group(1).decode()] = part[m.end() :]

    while i < end:
        c = data[i]
        if c in _QUOTES:
            i += 1
            while i < end and data[i] != c:
                i += 2 if data[i] == 0x5C else 1
        elif c in _OPENERS:
            depth += 1
        elif c in _CLOSERS:
            depth -= 1
            if depth == 0:
                take(i)
                return keys
        elif c == 0x2C and depth == 1:  # a comma between two of the object's own keys
            take(i)
            seg = i + 1
        i += 1
    return {}  # never closed within the bound: not a literal this reader understands


def command_aliases(data: bytes | memoryview) -> dict[str, tuple[str, ...]]:
    """Every slash command the CLI's bundle gives aliases, from its own command table:
    {"exit": ("quit",), "clear": ("new", "reset"), ...}, aliases sorted. A command declared twice
    (interactive and not) gets the union."""
    found: dict[str, set[str]] = {}
    for hit in _ALIASES_KEY.finditer(data):
        start = _object_start(data, hit.start())
        if start is None:
            continue
        keys = _own_keys(data, start)
        if keys.get("type") not in _COMMAND_TYPES:
            continue
        name = _STRING.fullmatch(keys.get("name", b""))
        if name is None:
            continue
        aliases = {m.decode() for m in _STRING.findall(keys["aliases"])}
        found.setdefault(name.group(1).decode(), set()).update(aliases)
    return {name: tuple(sorted(a)) for name, a in found.items() if a}


def binary_command_aliases(binary: Path) -> dict[str, tuple[str, ...]]:
    """command_aliases of the installed binary (a ~400 MB file, mapped rather than read)."""
    with binary.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return command_aliases(data)  # type: ignore[arg-type]


def alias_drift(pinned: tuple[Pinned, ...], found: dict[str, tuple[str, ...]]) -> list[str]:
    """How the pinned rows' aliases differ from the binary's table, one line per command."""
    drift = []
    for pin in pinned:
        want, have = tuple(sorted(pin.aliases)), found.get(pin.name, ())
        if want != have:
            drift.append(f"/{pin.name} aliases: pinned {list(want)}, the CLI has {list(have)}")
    return drift
