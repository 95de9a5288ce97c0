"""Live: a repository's own Codex layer (`.codex/config.toml`) takes effect only when the
operator trusts the repository, and then as the run page says (COMPAT-adapter §15).

The repository commits an MCP server whose start leaves a marker. Started through run_start as
the new-run form does: untrusted, the run is refused (Codex cannot start without the layer but
on its "Open restricted" screen, drawn here as the control); trusted with the servers rejected,
the server never starts; trusted with them approved, it does (the control that makes the
second test mean something)."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from compat.codex.adapter_harness import CodexAdapterRig, Reading
from compat.codex.home import config_toml, prepare_home
from compat.codex.live import CodexTUI
from compat.codex.scripted_model import text, when
from compat.live import make_worktree
from providers.errors import SpawnFailed
from providers.registry import get_provider
from providers.schema import ProjectServers, WorkspaceChoices
from runs.services import run_handle, run_start

pytestmark = [pytest.mark.live, pytest.mark.django_db]


def MARKER(tmp_path: Path) -> Path:
    return tmp_path / "mcp-started"


def _commit_codex_layer(repo: Path, marker: Path, extra: str = "") -> None:
    server = marker.with_suffix(".py")
    server.write_text(
        f"import pathlib, sys\npathlib.Path({str(marker)!r}).write_text('ran')\nsys.stdin.read()\n"
    )
    (repo / ".codex").mkdir()
    (repo / ".codex" / "config.toml").write_text(
        f'[mcp_servers.probe]\ncommand = "{sys.executable}"\nargs = ["{server}"]\n{extra}'
    )
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    ident = ["-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]
    subprocess.run(["git", *ident, "commit", "-qm", "a codex layer"], cwd=repo, check=True)


@pytest.fixture
def rig(tmp_path, settings):
    """The adapter rig, its repository untrusted (the rig's home trusted the checkout: that
    entry is written out again without it), with a committed MCP server."""
    r = CodexAdapterRig(tmp_path, settings)
    (r.codex_home / "config.toml").write_text(config_toml(r.worktree, r.model.url, trust_worktree=False))
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    settings.LAB_TMUX_SOCKET = f"labtrust-{uuid.uuid4().hex[:8]}"
    r.sockets.append(settings.LAB_TMUX_SOCKET)
    _commit_codex_layer(r.worktree, MARKER(tmp_path))
    yield r
    r.close()


def _start(rig, *, trust: bool, servers: ProjectServers) -> Reading:
    run = run_start(
        provider_id="codex",
        repository=rig.worktree,
        branch=f"run-{uuid.uuid4().hex[:6]}",
        choices=WorkspaceChoices(project_servers=servers),
        trust=trust,
    )
    return Reading(provider=get_provider("codex"), handle=run_handle(run))


def _a_turn(rig, run: Reading, token: str) -> None:
    rig.model.script.add(when(token, text(f"{token} answered.")))
    run.provider.reply(run.handle, f"{token} hello")
    run.wait(lambda r: r.answered(f"{token} answered."), timeout=90, what="the turn")


def test_an_untrusted_repository_with_a_codex_layer_is_refused(rig):
    with pytest.raises(
        SpawnFailed, match=r"Codex project settings \(\.codex/config\.toml\) and is not trusted"
    ):
        _start(rig, trust=False, servers=ProjectServers.APPROVE)
    assert not get_provider("codex").repository_trusted(rig.worktree)
    assert not MARKER(rig.tmp_path).exists()


def test_trusted_with_servers_rejected_the_repositorys_server_never_starts(rig):
    run = _start(rig, trust=True, servers=ProjectServers.REJECT)
    assert run.provider.repository_trusted(rig.worktree)
    _a_turn(rig, run, "TRUST-REJECT")
    assert not MARKER(rig.tmp_path).exists(), "the rejected MCP server was started"


def test_control_trusted_with_servers_approved_it_starts(rig):
    run = _start(rig, trust=True, servers=ProjectServers.APPROVE)
    _a_turn(rig, run, "TRUST-APPROVE")
    deadline = time.monotonic() + 30
    while not MARKER(rig.tmp_path).exists():
        assert time.monotonic() < deadline, "the approved MCP server never started"
        time.sleep(0.1)


def test_a_trusted_repositorys_shell_policy_that_drops_the_guard_is_refused(tmp_path, settings):
    r = CodexAdapterRig(tmp_path, settings)
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    settings.LAB_TMUX_SOCKET = f"labtrust-{uuid.uuid4().hex[:8]}"
    r.sockets.append(settings.LAB_TMUX_SOCKET)
    try:
        _commit_codex_layer(
            r.worktree, tmp_path / "unused", '\n[shell_environment_policy]\ninherit = "none"\n'
        )
        with pytest.raises(SpawnFailed, match=r"shell_environment_policy\.inherit = 'none'.*commit guard"):
            _start(r, trust=True, servers=ProjectServers.REJECT)
    finally:
        r.close()


def test_control_codex_holds_an_untrusted_folder_on_a_screen(tmp_path, codex_model):
    """Why an untrusted run with a layer is refused rather than started: an "untrusted" entry
    is not a way to start without the layer, it draws "Open restricted" before the composer."""
    wt = make_worktree(tmp_path / "wt")
    _commit_codex_layer(wt, tmp_path / "mcp-started")
    env = prepare_home(tmp_path / "home", wt, codex_model.url, trust_worktree=False)
    config = Path(env["CODEX_HOME"]) / "config.toml"
    config.write_text(config.read_text() + f'\n[projects."{wt}"]\ntrust_level = "untrusted"\n')
    tui = CodexTUI(env, wt)
    try:
        tui.start()
        tui.wait_pane(r"Open restricted", timeout=45)
        assert "from untrusted folders stay disabled" in tui.pane()
    finally:
        tui.kill()
