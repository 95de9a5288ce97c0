"""The installed Gemini CLI is the version package.json pins, and the fixtures come from it."""

from __future__ import annotations

from compat.gemini.home import PINNED_VERSION, fixtures_dir, installed_version


def test_the_installed_binary_is_the_pinned_version() -> None:
    assert installed_version() == PINNED_VERSION


def test_the_fixtures_were_captured_from_the_pinned_version() -> None:
    assert sorted(p.name for p in fixtures_dir().glob("*.jsonl")), f"no fixtures in {fixtures_dir()}"
