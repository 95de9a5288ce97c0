"""Live: a freshly seeded worktree starts the real claude with no trust dialog, the model sees
the seeded context text and skill, and git status stays clean (issue 8.6).

The trust comes from seed_workspace alone. claude_home's prepare_home trusts its scratch repo,
and 2.1.328 lets a linked worktree inherit its main repository's trust (COMPAT-seeding §1), so
the fixture drops that entry, keeping the onboarding and API-key approval."""

from __future__ import annotations

import json
import re
import subprocess
import uuid

import pytest

from compat.live import LiveTUI, has_assistant_text
from compat.scripted_model import text
from providers.claude_code.seed import SEED_META, seed_workspace
from runs.worktrees import worktree_create
from seeding.seeder import SeedOutcome, seed

# COMPAT-seeding §1: the folder-trust dialog of 2.1.328.
TRUST_DIALOG_RE = r"Is this a project you created or one you trust\?|Yes, I trust this folder"


def _trusted_projects(home):
    return json.loads((home / ".claude.json").read_text()).get("projects", {})


def _git_status(wt):
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=wt,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture
def linked_worktree(tmp_path, claude_home):
    wt = worktree_create(
        repository=claude_home.worktree, branch=f"run-{uuid.uuid4().hex[:6]}", path=tmp_path / "run-wt"
    )
    config = claude_home.home / ".claude.json"
    state = json.loads(config.read_text())
    state["projects"] = {}
    config.write_text(json.dumps(state, indent=2))
    return wt


@pytest.fixture
def tuis():
    started: list[LiveTUI] = []
    yield started
    for tui in started:
        tui.kill()


@pytest.mark.live
def test_seeded_worktree_starts_trusted_and_the_model_sees_the_context(
    tmp_path, scripted_model, claude_home, linked_worktree, tuis
):
    token = f"LABSEED{uuid.uuid4().hex[:12].upper()}"
    pool = tmp_path / "pool"
    (pool / "lab-probe-skill").mkdir(parents=True)
    (pool / "lab-probe-skill" / "SKILL.md").write_text(
        "---\nname: lab-probe-skill\ndescription: Says the lab probe word.\n---\n\nSay LABPROBE.\n"
    )
    actions = seed(
        linked_worktree,
        SEED_META,
        context_text=f"# Operator context\n\nThe project codeword is {token}.\n",
        skills_pool=pool,
    )
    assert [a.outcome for a in actions].count(SeedOutcome.WRITE) >= 3
    written = seed_workspace(linked_worktree, home=claude_home.home)
    assert claude_home.home / ".claude.json" in written
    assert _trusted_projects(claude_home.home)[str(linked_worktree)]["hasTrustDialogAccepted"] is True
    assert _git_status(linked_worktree) == ""

    scripted_model.script.add(text("Seeded and answered."))
    tui = LiveTUI(claude_home.env, linked_worktree)
    tuis.append(tui)
    tui.start("--permission-mode", "manual")
    tui.wait_ready()  # a trust dialog would hold the composer back and time this out
    assert not re.search(TRUST_DIALOG_RE, tui.pane())
    tui.prompt("hello from a seeded worktree")
    tui.wait_for(has_assistant_text("Seeded and answered."), timeout=60)

    bodies = [json.dumps(r["body"], ensure_ascii=False) for r in scripted_model.turn_requests()]
    assert any(token in b for b in bodies), "the seeded CLAUDE.md never reached the model"
    # COMPAT-seeding §2: the first user message carries it as project instructions.
    assert any(f"Contents of {linked_worktree}/CLAUDE.md (project instructions" in b for b in bodies)
    assert any("lab-probe-skill" in b for b in bodies), "the seeded skill was not listed to the model"
    assert _git_status(linked_worktree) == ""


@pytest.mark.live
def test_control_an_unseeded_worktree_shows_the_trust_dialog(claude_home, linked_worktree, tuis):
    """Without seed_workspace the same start is held by the trust dialog: the test above is
    meaningful only because this one holds."""
    tui = LiveTUI(claude_home.env, linked_worktree)
    tuis.append(tui)
    tui.start("--permission-mode", "manual")
    tui.wait_pane(TRUST_DIALOG_RE, timeout=45)
