"""Live: the first run on a fresh machine. An agent HOME the CLI has never used,
only an API key and the scripted model: lab's seeding takes 2.1.328 past its first-run screens
to the prompt, and the first reply is answered. No credential: the new-run page shows the
login card and starts nothing. A CLI that exits at start: the run page shows its reason.

The controls pin what 2.1.328 does without each seeded key (COMPAT-seeding §7), so the tests
above them mean something when the pin moves."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from compat.claude_code.live import ClaudeTUI, has_assistant_text
from compat.claude_code.scripted_model import text
from compat.live import make_worktree
from providers.tmux import Tmux
from runs import services
from runs.models import Run

pytestmark = pytest.mark.live

KEY = "sk-ant-api03-lab-first-run-" + uuid.uuid4().hex
# COMPAT-seeding §7: the screens of a fresh HOME.
API_KEY_DIALOG_RE = r"Detected a custom API key in your environment|Do you want to use this API key\?"
NO_SERVICE_RE = "Unable to connect to Anthropic services"
TRUST_DIALOG_RE = r"Is this a project you created or one you trust\?"
OFFLINE = {
    "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def _closed_port() -> int:
    """A loopback port nothing listens on: a proxy there refuses every connection, so the
    CLI's reachability check fails the same way on any machine, online or not."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, *, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def fresh(tmp_path, settings, scripted_model):
    """An empty agent HOME, a repository whose committed .claude/settings.json pre-approves
    permissions, and lab's settings pointing at both, as a first `make run` would have them."""
    home = tmp_path / "agent-home"
    home.mkdir()
    repo = make_worktree(tmp_path / "repo")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(git status:*)", "Read"], "defaultMode": "acceptEdits"}})
    )
    ident = ["-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]
    subprocess.run(["git", *ident, "add", ".claude/settings.json"], cwd=repo, check=True)
    subprocess.run(["git", *ident, "commit", "-qm", "project settings"], cwd=repo, check=True)
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    settings.LAB_TMUX_SOCKET = f"labfirst-{uuid.uuid4().hex[:8]}"
    settings.LAB_AGENT_HOME = str(home)
    (tmp_path / "context.md").write_text("# Operator context\n")
    settings.LAB_SEED_CONTEXT_FILE = str(tmp_path / "context.md")
    settings.LAB_AGENT_ENV = {**OFFLINE, "ANTHROPIC_BASE_URL": scripted_model.url, "ANTHROPIC_API_KEY": KEY}
    yield home, repo
    Tmux(settings.LAB_TMUX_SOCKET).kill_server()


@pytest.mark.django_db
def test_a_fresh_home_with_only_an_api_key_reaches_the_prompt_and_answers(fresh, scripted_model):
    home, repo = fresh
    assert list(home.iterdir()) == []
    scripted_model.script.add(text("First answer on a fresh machine."))
    run = services.run_start(provider_id="claude-code", repository=repo, branch="lab/first")
    # Delivered (the reply waits for the prompt and for the transcript to record it) ...
    try:
        services.run_reply(run=run, text="hello, first run")
    except Exception:
        # What held the TUI, for whoever reads the failure (the test watches; lab never does).
        print("The agent's screen:\n", Tmux(run.tmux_socket).capture(run.tmux_session))
        print("Its ~/.claude.json:\n", (home / ".claude.json").read_text())
        raise
    # ... and answered.
    lines = _wait(
        lambda: (
            Path(run.transcript_path).exists()
            and has_assistant_text("First answer on a fresh machine.")(
                ClaudeTUI.read_lines(Path(run.transcript_path))
            )
        ),
        timeout=60,
        what="the scripted answer in the transcript",
    )
    assert lines
    assert services.run_alive(run)
    state = json.loads((home / ".claude.json").read_text())
    assert state["hasCompletedOnboarding"] is True
    assert state["customApiKeyResponses"]["approved"] == [KEY[-20:]]
    assert KEY not in (home / ".claude.json").read_text()


@pytest.mark.django_db
def test_no_credential_shows_the_login_card_before_anything_starts(fresh, settings, authed_client):
    _home, repo = fresh
    settings.LAB_AGENT_ENV = {k: v for k, v in settings.LAB_AGENT_ENV.items() if k != "ANTHROPIC_API_KEY"}
    response = authed_client.post(
        "/runs/new/", {"provider": "claude-code", "repository": str(repo), "branch": "lab/nocred"}
    )
    body = response.content.decode()
    assert response.status_code == 422
    # Both routes the README gives: the key in LAB_AGENT_ENV and the account login.
    assert (
        "Claude Code has no credential: put an API key in the agent&#x27;s environment (LAB_AGENT_ENV, as "
        "ANTHROPIC_API_KEY) and restart lab, or log in to your account below; then start the run."
    ) in body
    assert 'id="auth-card-claude-code"' in body and "Log in to Claude Code" in body
    assert not Run.objects.exists()
    assert Tmux(settings.LAB_TMUX_SOCKET).list_sessions() == []
    assert (
        subprocess.run(["git", "branch", "--list", "lab/nocred"], cwd=repo, capture_output=True).stdout == b""
    )


@pytest.mark.django_db
def test_a_cli_that_exits_at_start_shows_its_reason(fresh, settings, authed_client):
    """Unseeded (seed=False), the fresh HOME runs 2.1.328's onboarding, whose reachability
    check fails through a refusing proxy: the CLI prints why and exits 1 (an offline machine)."""
    _home, repo = fresh
    settings.LAB_AGENT_ENV = {**settings.LAB_AGENT_ENV, "HTTPS_PROXY": f"http://127.0.0.1:{_closed_port()}"}
    run = services.run_start(provider_id="claude-code", repository=repo, branch="lab/dies", seed=False)
    tmux = Tmux(run.tmux_socket)
    _wait(lambda: tmux.pane_exit(run.tmux_session), timeout=60, what="the CLI to exit")
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'class="badge state-ended"' in body
    assert re.search(r"Claude Code exited( with status 1)?\. What its terminal showed last", body)
    assert NO_SERVICE_RE in body
    run.refresh_from_db()
    assert run.is_ended and not tmux.has_session(run.tmux_session)


# --- controls: what 2.1.328 does on a fresh HOME without each seeded key (COMPAT-seeding §7) ---


def _probe_env(home: Path, base_url: str) -> dict[str, str]:
    """The CLI's whole environment for a probe started by hand (no lab in between)."""
    return {
        "HOME": str(home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        **OFFLINE,
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": KEY,
    }


@pytest.fixture
def probe(tmp_path, scripted_model):
    started: list[ClaudeTUI] = []

    def start(config: dict | None, **extra_env: str) -> ClaudeTUI:
        home = tmp_path / f"home-{len(started)}"
        home.mkdir()
        wt = make_worktree(tmp_path / f"wt-{len(started)}")
        if config is not None:
            text_ = json.dumps(config).replace("WORKTREE", str(wt))
            (home / ".claude.json").write_text(text_)
        tui = ClaudeTUI({**_probe_env(home, scripted_model.url), **extra_env}, wt)
        started.append(tui)
        return tui.start("--permission-mode", "manual")

    yield start
    for tui in started:
        tui.kill()


def test_control_without_onboarding_the_cli_exits_with_its_reason(probe):
    tui = probe(None, HTTPS_PROXY=f"http://127.0.0.1:{_closed_port()}")
    dead = lambda: tui.tmux("display-message", "-p", "-t", tui.target, "#{pane_dead}").stdout.strip() == "1"  # noqa: E731
    _wait(dead, timeout=60, what="the CLI to exit")
    assert NO_SERVICE_RE in tui.pane()


def test_control_an_unapproved_key_holds_the_tui_on_its_dialog(probe):
    tui = probe({"hasCompletedOnboarding": True, "projects": {"WORKTREE": {"hasTrustDialogAccepted": True}}})
    tui.wait_pane(API_KEY_DIALOG_RE, timeout=60)
    assert "No (recommended)" in tui.pane()


def test_control_the_three_keys_reach_the_prompt(probe):
    tui = probe(
        {
            "hasCompletedOnboarding": True,
            "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
            "projects": {"WORKTREE": {"hasTrustDialogAccepted": True}},
        }
    )
    tui.wait_ready()
    assert not re.search(f"{API_KEY_DIALOG_RE}|{TRUST_DIALOG_RE}", tui.pane())


def test_auth_status_reports_a_key_it_never_tried(tmp_path):
    """COMPAT-login L14: a made-up key, every server unreachable: still "loggedIn": true."""
    from compat.claude_code.home import claude_binary

    port = _closed_port()
    env = {
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "ANTHROPIC_API_KEY": "sk-ant-made-up-0000000000000000",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "HTTPS_PROXY": f"http://127.0.0.1:{port}",
    }
    done = subprocess.run([str(claude_binary()), "auth", "status"], env=env, capture_output=True, timeout=60)
    status = json.loads(done.stdout)
    assert done.returncode == 0
    assert (status["loggedIn"], status["authMethod"], status["apiKeySource"]) == (
        True,
        "api_key",
        "ANTHROPIC_API_KEY",
    )


def test_control_permissions_in_the_repository_need_the_main_checkout_trusted(
    tmp_path, probe, scripted_model
):
    """A linked worktree trusted on its own is held again once the committed settings
    pre-approve a permission; trusting the main checkout too (what seed_workspace does) is
    what the fresh-home test above relies on."""
    repo = make_worktree(tmp_path / "perm-repo")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Read"]}}))
    ident = ["-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]
    subprocess.run(["git", *ident, "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", *ident, "commit", "-qm", "settings"], cwd=repo, check=True)
    linked = tmp_path / "perm-linked"
    subprocess.run(["git", "worktree", "add", "-q", "-b", "run", str(linked)], cwd=repo, check=True)
    home = tmp_path / "perm-home"
    home.mkdir()
    config = {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
        "projects": {str(linked): {"hasTrustDialogAccepted": True}},
    }
    (home / ".claude.json").write_text(json.dumps(config))
    with ClaudeTUI(_probe_env(home, scripted_model.url), linked) as tui:
        tui.start("--permission-mode", "manual")
        tui.wait_pane(r"pre-approves 1 tool permission in \.claude/settings\.json", timeout=60)
        assert re.search(TRUST_DIALOG_RE, tui.pane())
