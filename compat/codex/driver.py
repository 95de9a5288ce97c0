"""Codex's conformance driver: the real pinned binary against the scripted Responses API model, in
a private HOME + CODEX_HOME, through the production adapter (docs/providers.md, "Join the
conformance suite").

The suite finds it by convention (compat.conformance.load_driver reads DRIVER here). It starts
what it needs itself, lazily, and stops it at teardown: it requests no fixture of compat's.
"""

from __future__ import annotations

from pathlib import Path

from compat.conformance import RigDriver

ROOT = Path(__file__).resolve().parents[2]


class CodexDriver(RigDriver):
    provider_id = "codex"
    dotted = "providers.codex.CodexProvider"
    rig_path = "compat.codex.adapter_harness.CodexAdapterRig"
    scripted_path = "compat.codex.scripted_model"
    # Captured fixtures, then the reader's synthesized edge cases.
    transcript_globs = (
        (ROOT / "compat" / "codex" / "fixtures", "*/*.jsonl"),
        (ROOT / "providers" / "codex" / "tests" / "data", "*.jsonl"),
    )


DRIVER = CodexDriver
