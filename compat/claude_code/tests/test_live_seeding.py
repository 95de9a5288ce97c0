"""Live: a freshly seeded worktree starts the real claude with no trust dialog, the model sees
the seeded context text and skill, and git status stays clean.

The trust comes from seed_workspace alone. claude_home's prepare_home trusts its scratch repo,
and 2.1.328 lets a linked worktree inherit its main repository's trust (COMPAT-seeding §1), so
the fixture drops that entry, keeping the onboarding and API-key approval."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from compat.claude_code.live import ClaudeTUI, has_assistant_text, tool_results
from compat.claude_code.scripted_model import text, tool_use
from providers.claude_code.seed import SEED_META, seed_workspace
from providers.registry import get_provider
from providers.schema import ProjectServers, WorkspaceChoices
from providers.tmux import Tmux
from runs.services import run_handle, run_start
from seeding.seeder import SeedOutcome, seed
from seeding.worktrees import worktree_create

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
    started: list[ClaudeTUI] = []
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
    tui = ClaudeTUI(claude_home.env, linked_worktree)
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
    tui = ClaudeTUI(claude_home.env, linked_worktree)
    tuis.append(tui)
    tui.start("--permission-mode", "manual")
    tui.wait_pane(TRUST_DIALOG_RE, timeout=45)


# --- the operator's choices and the commit guard, through run_start --------------------------

# COMPAT-seeding §5: the start-up prompt a .mcp.json server in neither list raises.
MCP_PROMPT_RE = r"New MCP server found in this project|Continue without using this MCP server"
ATTRIBUTION_TRAILER = "Co-Authored-By: Claude Opus 5.5 <noreply@anthropic.com>"
# COMPAT-seeding §4: how the CLI tells the model to attribute (a system reminder).
ATTRIBUTION_INSTRUCTION = "End git commit messages with:"
IDENT = {"NAME": "lab-agent", "EMAIL": "lab-agent@example.invalid"}


def _commit_mcp_json(repo, marker):
    """The repository declares an MCP server; starting it would create `marker`."""
    server = marker.with_suffix(".py")
    server.write_text(
        f"import pathlib, sys\npathlib.Path({str(marker)!r}).write_text('started')\nsys.stdin.read()\n"
    )
    (repo / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"probe": {"command": sys.executable, "args": [str(server)]}}})
    )
    ident = ["-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]
    subprocess.run(["git", "add", ".mcp.json"], cwd=repo, check=True)
    subprocess.run(["git", *ident, "commit", "-qm", "declare an MCP server"], cwd=repo, check=True)


def _wait_transcript(path, predicate, *, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = ClaudeTUI.read_lines(Path(path)) if Path(path).exists() else []
        if predicate(lines):
            return lines
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.live
@pytest.mark.django_db
def test_a_run_started_with_attribution_off_and_mcp_rejected(
    tmp_path, settings, scripted_model, claude_home, linked_worktree
):
    """run_start, as the new-run form calls it: the repository's MCP server neither prompts nor
    starts, the model is not told to add attribution, a seeded file the agent stages is refused
    at commit, and the agent's attribution trailer is scrubbed from the commit it makes."""
    marker = tmp_path / "mcp-started"
    _commit_mcp_json(claude_home.worktree, marker)
    wt = linked_worktree
    subprocess.run(["git", "merge", "-q", "--ff-only", "main"], cwd=wt, check=True)
    # The operator's own local settings: lab must keep this key (and the test lets Bash run).
    (wt / ".claude").mkdir()
    (wt / ".claude" / "settings.local.json").write_text(json.dumps({"permissions": {"allow": ["Bash"]}}))
    (wt / "feature.txt").write_text("the agent's work\n")
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    settings.LAB_TMUX_SOCKET = f"labseed-{uuid.uuid4().hex[:8]}"
    settings.LAB_AGENT_HOME = str(claude_home.home)
    settings.LAB_SEED_CONTEXT_FILE = str(tmp_path / "context.md")
    (tmp_path / "context.md").write_text("# Operator context\n")
    agent_env = {k: v for k, v in claude_home.env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
    ident = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER") for what, value in IDENT.items()}
    settings.LAB_AGENT_ENV = {**agent_env, **ident}
    branch = subprocess.run(
        ["git", "branch", "--show-current"], cwd=wt, capture_output=True, text=True, check=True
    ).stdout.strip()

    bash = {"description": "commit the work"}
    scripted_model.script.add(
        tool_use("Bash", {**bash, "command": "git add -f CLAUDE.md feature.txt; git commit -m 'Add it'"}),
        tool_use(
            "Bash",
            {
                **bash,
                "command": "git restore --staged -- CLAUDE.md && "
                f"git commit -m 'Add it' -m '{ATTRIBUTION_TRAILER}'",
            },
        ),
        text("Committed."),
    )
    run = run_start(
        provider_id="claude-code",
        repository=claude_home.worktree,
        branch=branch,
        choices=WorkspaceChoices(attribution=False, project_servers=ProjectServers.REJECT),
        # The operator trusts the repository: the worktree's local settings (their Bash rule,
        # lab's choices) load (COMPAT-seeding §8).
        trust=True,
    )
    try:
        assert Path(run.worktree) == wt
        assert json.loads((wt / ".claude" / "settings.local.json").read_text()) == {
            "permissions": {"allow": ["Bash"]},
            "attribution": {"commit": "", "pr": ""},
            "disabledMcpjsonServers": ["probe"],
        }
        get_provider("claude-code").reply(run_handle(run), "Commit the feature, please.")
        lines = _wait_transcript(
            run.transcript_path, has_assistant_text("Committed."), timeout=120, what="the agent's last word"
        )
        results = [json.dumps(block) for _, block in tool_results(lines)]
        assert "must not be committed" in results[0] and "CLAUDE.md" in results[0]
        log = subprocess.run(
            ["git", "log", "-1", "--format=%B--%n%an", "--name-only"], cwd=wt, capture_output=True, text=True
        ).stdout
        assert log == "Add it\n--\nlab-agent\n\nfeature.txt\n", log
        bodies = [json.dumps(r["body"], ensure_ascii=False) for r in scripted_model.turn_requests()]
        # COMPAT-seeding §4: the CLI tells the model its attribution lines unless told not to.
        assert not any(ATTRIBUTION_INSTRUCTION in b for b in bodies)
        assert not marker.exists(), "the rejected MCP server was started"
        assert _git_status(wt) == ""
    finally:
        Tmux(run.tmux_socket).kill_server()


@pytest.mark.live
def test_control_an_unchosen_mcp_server_holds_the_tui_at_start(tmp_path, claude_home, tuis):
    """Without lab's choice the prompt holds the TUI before its composer, where a run could
    never get past it: the test above means something only because this one holds."""
    marker = tmp_path / "mcp-started"
    _commit_mcp_json(claude_home.worktree, marker)
    tui = ClaudeTUI(claude_home.env, claude_home.worktree)
    tuis.append(tui)
    tui.start("--permission-mode", "manual")
    tui.wait_pane(MCP_PROMPT_RE, timeout=45)
    assert not marker.exists()


@pytest.mark.live
def test_control_by_default_the_model_is_told_to_attribute(scripted_model, live_tui):
    scripted_model.script.add(text("Hello."))
    tui = live_tui("--permission-mode", "manual")
    tui.prompt("hello")
    tui.wait_for(has_assistant_text("Hello."), timeout=60)
    bodies = [json.dumps(r["body"], ensure_ascii=False) for r in scripted_model.turn_requests()]
    assert any(f"{ATTRIBUTION_INSTRUCTION}\\n{ATTRIBUTION_TRAILER}" in b for b in bodies)
