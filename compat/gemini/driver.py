"""Gemini CLI's conformance driver: the real pinned binary against the scripted Gemini API, in a
private home, through the production adapter (docs/providers.md, "Join the conformance suite").
"""

from __future__ import annotations

from pathlib import Path

from compat.conformance import RigDriver

ROOT = Path(__file__).resolve().parents[2]


class GeminiDriver(RigDriver):
    provider_id = "gemini"
    dotted = "providers.gemini.GeminiProvider"
    rig_path = "compat.gemini.adapter_harness.GeminiAdapterRig"
    scripted_path = "compat.gemini.scripted_model"
    # Captured fixtures, then the reader's synthesized edge cases.
    transcript_globs = (
        (ROOT / "compat" / "gemini" / "fixtures", "*/*.jsonl"),
        (ROOT / "providers" / "gemini" / "tests" / "data", "*.jsonl"),
    )


DRIVER = GeminiDriver
