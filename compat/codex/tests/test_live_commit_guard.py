"""Live: lab's commit guard reaches the git that Codex's `exec_command` runs
(compat/codex/COMPAT-adapter.md §13).

The run starts the way the new-run form starts it (`runs.services.run_start`: a linked worktree,
lab's seeding, `agent_guard_env`, `CodexProvider.spawn`), and the scripted model makes Codex run
git in the worktree: once in the sandbox (where 0.171.0 keeps the worktree's git metadata
read-only, so a commit has to ask for escalation) and once escalated, approved from lab. The
evidence is what the shell printed (the rollout's `function_call_output`) and the repository's
history.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from compat.codex.adapter_harness import CodexAdapterRig, Reading
from compat.codex.live import payloads, read_jsonl
from compat.codex.scripted_model import exec_command, text, when
from providers.codex.dialogs import ALLOW
from providers.registry import get_provider
from providers.schema import Answer, DialogKind, WorkspaceChoices
from providers.tmux import Tmux
from runs.services import run_handle, run_start

pytestmark = [pytest.mark.live, pytest.mark.django_db]

IDENT = {"NAME": "lab-agent", "EMAIL": "lab-agent@example.invalid"}
REFUSED = "must not be committed"  # seeding/commit_guard.py's pre-commit message


def _git(worktree: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=worktree, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def rig(tmp_path, settings):
    """The adapter rig's scripted model and CODEX_HOME, and lab's data folders and seeding
    settings in tmp_path, as an operator's deployment sets them."""
    r = CodexAdapterRig(tmp_path, settings)
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    settings.LAB_TMUX_SOCKET = f"labguard-{uuid.uuid4().hex[:8]}"
    settings.LAB_SEED_CONTEXT_FILE = str(tmp_path / "context.md")
    (tmp_path / "context.md").write_text("# Operator context\nGUARD-CONTEXT\n")
    ident = {f"GIT_{who}_{what}": v for who in ("AUTHOR", "COMMITTER") for what, v in IDENT.items()}
    settings.LAB_AGENT_ENV = {**settings.LAB_AGENT_ENV, **ident}
    r.sockets.append(settings.LAB_TMUX_SOCKET)  # close() kills run_start's tmux server too
    yield r
    r.close()


def _start(rig, branch: str) -> Reading:
    run = run_start(
        provider_id="codex",
        repository=rig.worktree,
        branch=branch,
        choices=WorkspaceChoices(attribution=False),
    )
    assert Tmux(run.tmux_socket).pane_pid(run.tmux_session), "the run's TUI is not up"
    return Reading(provider=get_provider("codex"), handle=run_handle(run))


def _outputs(reading: Reading) -> dict[str, str]:
    """call_id → the shell's output, from the rollout itself."""
    lines = read_jsonl(Path(reading.path))
    return {p["call_id"]: p["output"] for p in payloads(lines, "response_item", "function_call_output")}


def _calls(reading: Reading) -> list[dict]:
    lines = read_jsonl(Path(reading.path))
    return [p for p in payloads(lines, "response_item", "function_call") if p.get("name") == "exec_command"]


def test_a_commit_codex_runs_goes_through_the_guard(rig, settings):
    hooks_dir = str(Path(settings.DATA_DIR) / "git-hooks")
    commit = (
        "git add -f AGENTS.md feature.txt; git commit -m 'Add it'; echo refused=$?; "
        "git restore --staged -- AGENTS.md && git commit -q -m 'Add it'; echo committed=$?"
    )
    rig.model.script.add(
        when(
            "TOKEN-GUARD",
            # In the sandbox: what git sees, and that the commit cannot happen there.
            exec_command("git config --get core.hooksPath; git add feature.txt; echo sandboxed-add=$?"),
            # Escalated, as Codex asks after the sandbox refused: the commit itself.
            exec_command(commit, escalated=True, justification="commit the work"),
            text("Committed."),
        )
    )
    run = _start(rig, "guard-1")
    worktree = Path(run.handle.worktree)
    base = _git(worktree, "rev-parse", "HEAD").strip()
    assert (worktree / "AGENTS.md").read_text().startswith("# Operator context"), "AGENTS.md was not seeded"
    (worktree / "feature.txt").write_text("the agent's work\n")

    run.provider.reply(run.handle, "TOKEN-GUARD commit the feature")
    deadline = time.monotonic() + 90
    while (dialog := run.provider.pending_dialog(run.handle)) is None:
        assert time.monotonic() < deadline, "the escalated commit never asked for approval"
        time.sleep(0.05)
    assert dialog.kind == DialogKind.APPROVAL and "git commit" in dialog.body
    allow = next(i for i, o in enumerate(dialog.options) if o.key == ALLOW)
    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(allow,))])
    run.wait(lambda r: r.answered("Committed."), timeout=120, what="the agent's last word")

    # The repository: one new commit, with the agent's file and without the seeded one.
    assert _git(worktree, "log", "--format=%s|%an", f"{base}..HEAD").splitlines() == ["Add it|lab-agent"]
    assert _git(worktree, "diff", "--name-only", base, "HEAD").splitlines() == ["feature.txt"]
    assert _git(worktree, "status", "--porcelain", "--untracked-files=all") == ""

    # The shell's own words, in the order the model asked.
    sandboxed, escalated = _calls(run)
    assert json.loads(escalated["arguments"]).get("sandbox_permissions") == "require_escalated"
    outputs = _outputs(run)
    seen = outputs[sandboxed["call_id"]]
    assert hooks_dir in seen, f"the sandboxed shell's git does not use lab's hooks:\n{seen}"
    # 0.171.0's workspace-write sandbox keeps a linked worktree's git metadata read-only.
    assert "Read-only file system" in seen and "sandboxed-add=128" in seen, seen
    done = outputs[escalated["call_id"]]
    assert f"{REFUSED}:\n  AGENTS.md\n" in done and "refused=1" in done, done
    assert "committed=0" in done, done


GUARD_NAMES = ("GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "LAB_GUARD_SEEDED")


def _shell_env(rig, token: str, branch: str) -> dict[str, str]:
    """Start a run, have Codex's sandboxed shell print its environment, return it."""
    rig.model.script.add(when(token, exec_command("env"), text(f"{token} done.")))
    run = _start(rig, branch)
    run.provider.reply(run.handle, f"{token} go")
    run.wait(lambda r: r.answered(f"{token} done."), timeout=90, what="the env command's turn")
    [output] = _outputs(run).values()
    body = output.split("Output:\n", 1)[-1]
    return dict(line.split("=", 1) for line in body.splitlines() if "=" in line)


@pytest.mark.parametrize(
    ("policy", "setting"),
    [
        ('inherit = "core"', "inherit"),
        ("ignore_default_excludes = false", "ignore_default_excludes"),
        ('exclude = ["GIT_*"]', "exclude"),
    ],
)
def test_a_shell_policy_that_drops_the_guard_refuses_the_run(rig, monkeypatch, policy, setting):
    """An operator's `[shell_environment_policy]` can keep the guard from Codex's shell (the
    control half: the binary really drops it), so the adapter refuses to spawn under it."""
    from providers.codex import provider as codex_provider
    from providers.errors import SpawnFailed

    config = rig.codex_home / "config.toml"
    config.write_text(config.read_text() + f"\n[shell_environment_policy]\n{policy}\n")
    with pytest.raises(
        SpawnFailed, match=rf"shell_environment_policy\.{setting}.*commit guard would not apply"
    ):
        _start(rig, "guard-refused")

    monkeypatch.setattr(codex_provider, "shell_policy_drops", lambda home, names: ([], ""))
    env = _shell_env(rig, "TOKEN-POLICY", "guard-unchecked")
    assert set(GUARD_NAMES) - set(env), f"Codex kept every guard variable under {policy!r}: {sorted(env)}"


def test_a_shell_policy_that_keeps_the_guard_lets_the_run_start(rig, settings):
    config = rig.codex_home / "config.toml"
    config.write_text(config.read_text() + '\n[shell_environment_policy]\nexclude = ["AWS_*"]\n')
    env = _shell_env(rig, "TOKEN-KEPT", "guard-kept")
    assert set(GUARD_NAMES) <= set(env)
    assert env["GIT_CONFIG_VALUE_0"] == str(Path(settings.DATA_DIR) / "git-hooks")
