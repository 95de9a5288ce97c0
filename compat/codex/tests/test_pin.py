"""Codex is pinned exactly, in one place: package.json (the lock agrees, and compat reads it)."""

from __future__ import annotations

import json

from compat.codex.home import PINNED_VERSION, REPO_ROOT


def test_pinned_version_is_package_json_exactly():
    pin = json.loads((REPO_ROOT / "package.json").read_text())["dependencies"]["@openai/codex"]
    assert pin == PINNED_VERSION == "0.171.0"
    lock = json.loads((REPO_ROOT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@openai/codex"]["version"] == PINNED_VERSION
