"""Pytest fixtures for the Gemini probes: a scripted Gemini API and a rig that starts the real
TUI through lab's production adapter. Named ``gemini_*`` so they never shadow another
provider's fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat.gemini.adapter_harness import GeminiAdapterRig


@pytest.fixture
def gemini_rig(tmp_path: Path, settings: Any) -> Iterator[GeminiAdapterRig]:
    """A scripted model, a private home and a worktree; every run it starts is killed at
    teardown, pass or fail."""
    rig = GeminiAdapterRig(tmp_path, settings)
    try:
        yield rig
    finally:
        rig.close()
