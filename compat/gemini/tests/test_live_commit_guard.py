"""Live: a run started the way the new-run form starts it (`runs.services.run_start`: a linked
worktree, lab's seeding, `agent_guard_env`, `GeminiProvider.spawn`): the seeded GEMINI.md reaches
the model, and lab's commit guard reaches the git that Gemini's shell runs (compat/gemini/COMPAT.md
§12, §13). The evidence is what the model was sent, what the shell printed and the history."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from compat.adapter import AdapterRun
from compat.gemini.adapter_harness import GeminiAdapterRig
from compat.gemini.scripted_model import function_responses, shell, text, when
from providers.gemini.dialogs import ALLOW
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
    r = GeminiAdapterRig(tmp_path, settings)
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    settings.LAB_TMUX_SOCKET = f"labguard-{uuid.uuid4().hex[:8]}"
    settings.LAB_SEED_CONTEXT_FILE = str(tmp_path / "context.md")
    (tmp_path / "context.md").write_text("# Operator context\nGUARD-CONTEXT\n")
    ident = {f"GIT_{who}_{what}": v for who in ("AUTHOR", "COMMITTER") for what, v in IDENT.items()}
    settings.LAB_AGENT_ENV = {**settings.LAB_AGENT_ENV, **ident}
    r.sockets.append(settings.LAB_TMUX_SOCKET)
    yield r
    r.close()


def test_the_context_is_read_and_a_commit_gemini_runs_goes_through_the_guard(rig, settings):
    hooks_dir = str(Path(settings.DATA_DIR) / "git-hooks")
    commit = (
        "git config --get core.hooksPath; echo got=$?; "
        "GIT_CONFIG_PARAMETERS= git config --get core.hooksPath; echo blank=$?; "
        "git add -f GEMINI.md feature.txt; git commit -m 'Add it'; "
        "echo refused=$?; git restore --staged -- GEMINI.md && git commit -q -m 'Add it'; echo committed=$?"
    )
    rig.model.script.add(when("TOKEN-GUARD", shell(commit, "commit the work"), text("Committed.")))
    record = run_start(
        provider_id="gemini",
        repository=rig.worktree,
        branch="guard-1",
        choices=WorkspaceChoices(attribution=False),
    )
    assert Tmux(record.tmux_socket).pane_pid(record.tmux_session), "the run's TUI is not up"
    run = AdapterRun(provider=get_provider("gemini"), handle=run_handle(record))
    worktree = Path(run.handle.worktree)
    base = _git(worktree, "rev-parse", "HEAD").strip()
    assert (worktree / "GEMINI.md").read_text().startswith("# Operator context"), "GEMINI.md was not seeded"
    (worktree / "feature.txt").write_text("the agent's work\n")

    run.provider.reply(run.handle, "TOKEN-GUARD commit the feature")
    deadline = time.monotonic() + 60
    while (dialog := run.provider.pending_dialog(run.handle)) is None:
        assert time.monotonic() < deadline, f"the commit never asked for approval; pane:\n{run.pane()}"
        time.sleep(0.05)
    assert dialog.kind == DialogKind.APPROVAL and "git commit" in dialog.body
    allow = next(i for i, o in enumerate(dialog.options) if o.key == ALLOW)
    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(allow,))])
    run.wait(lambda r: r.answered("Committed."), timeout=90, what="the agent's last word")

    # The model was sent the seeded context (GEMINI.md is read into the session's context).
    first = rig.model.turn_requests()[0]["body"]
    assert "GUARD-CONTEXT" in json.dumps(first), "the seeded GEMINI.md never reached the model"
    # The shell's own words.
    [response] = [f for r in rig.model.turn_requests() for f in function_responses(r["body"])]
    printed = json.dumps(response)
    assert f"{hooks_dir}\\ngot=0" in printed, f"Gemini's shell git does not use lab's hooks: {printed}"
    # Why the adapter repeats the path in GIT_CONFIG_PARAMETERS: the CLI still appends its own
    # empty hooks path to the shell's GIT_CONFIG_COUNT entries.
    assert "got=0\\n\\nblank=0" in printed, printed
    assert REFUSED in printed and "refused=1" in printed and "committed=0" in printed, printed
    # The repository: one new commit, with the agent's file and without the seeded one.
    assert _git(worktree, "log", "--format=%s|%an", f"{base}..HEAD").splitlines() == ["Add it|lab-agent"], (
        printed
    )
    assert _git(worktree, "diff", "--name-only", base, "HEAD").splitlines() == ["feature.txt"]
