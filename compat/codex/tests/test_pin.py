"""Codex is pinned exactly, in one place: package.json (the lock agrees, and compat reads it)."""

from __future__ import annotations

import json
import os
import subprocess

from compat.codex.home import PINNED_VERSION, REPO_ROOT, codex_binary, installed_version


def test_pinned_version_is_package_json_exactly():
    pin = json.loads((REPO_ROOT / "package.json").read_text())["dependencies"]["@openai/codex"]
    assert pin == PINNED_VERSION == "0.171.0"
    lock = json.loads((REPO_ROOT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@openai/codex"]["version"] == PINNED_VERSION


def test_the_installed_binary_is_the_pin_and_says_so():
    binary = codex_binary()
    assert installed_version(binary) == PINNED_VERSION
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.split() == ["codex-cli", PINNED_VERSION]


def test_the_bin_dir_setting_finds_the_native_binary_behind_the_node_shim(monkeypatch):
    monkeypatch.setenv("LAB_AGENT_BIN_DIR", str(REPO_ROOT / "node_modules" / ".bin"))
    found = codex_binary()
    with open(found, "rb") as f:
        assert f.read(4) == b"\x7fELF"
    assert found.name == "codex" and os.access(found, os.X_OK)


def test_the_version_is_read_through_the_shim_too():
    assert installed_version(REPO_ROOT / "node_modules" / ".bin" / "codex") == PINNED_VERSION
