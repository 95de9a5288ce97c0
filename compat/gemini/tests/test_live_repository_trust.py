"""Live: the operator's trust of a repository is Gemini's own record (trustedFolders.json), and a
trusted run loads the repository's own settings: its hook runs (compat/gemini/COMPAT.md §9)."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from compat.adapter import spawned
from compat.gemini.adapter_harness import Reading
from compat.gemini.scripted_model import text

pytestmark = pytest.mark.live


def test_a_trusted_repository_loads_its_own_hooks(gemini_rig, tmp_path):
    provider = gemini_rig.provider()
    worktree = gemini_rig.worktree
    proof = tmp_path / "project-hook-ran"
    (worktree / ".gemini").mkdir()
    hook = {"hooks": [{"type": "command", "command": f"touch {proof}; echo '{{}}'"}]}
    (worktree / ".gemini" / "settings.json").write_text(json.dumps({"hooks": {"BeforeAgent": [hook]}}))

    assert not provider.repository_trusted(worktree)
    provider.trust_repository(worktree)
    assert provider.repository_trusted(worktree)
    assert any(r.kind == "hook" for r in provider.repository_settings(worktree))

    handle = dataclasses.replace(gemini_rig.handle(), trusted=True)
    run = spawned(provider, handle, {"approval": "default"}, Reading)
    gemini_rig.model.script.add(text("Trusted."))
    run.provider.reply(run.handle, "hello")
    run.wait(lambda r: r.answered("Trusted."), what="the reply")
    deadline = time.monotonic() + 10
    while not proof.exists():
        assert time.monotonic() < deadline, "the repository's own hook did not run in a trusted run"
        time.sleep(0.1)
