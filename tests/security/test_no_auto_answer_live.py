"""Case 10, live: the real Claude Code 2.1.328 TUI in manual mode asks to run a Bash command.
lab shows the run needs_input with the approval offered on the page and leaves the prompt alone: the command
never runs, whatever lab's watcher, page or socket does meanwhile: a page's socket stays open
(so the watcher runs), reconnects and says hello again, and the page is loaded, while the CLI
waits."""

from __future__ import annotations

import re
import uuid

import pytest
from asgiref.sync import sync_to_async

from compat.claude_code.scripted_model import text, tool_use
from providers.tmux import Tmux
from runs import services
from tests.security.support import drain, frames_until, session_cookie, ws_open

pytestmark = pytest.mark.live


@pytest.fixture
def live_settings(settings, claude_home, tmp_path):
    env = {k: v for k, v in claude_home.env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
    settings.LAB_AGENT_HOME = str(claude_home.home)
    settings.LAB_AGENT_ENV = env
    settings.LAB_TMUX_SOCKET = f"labsec-{uuid.uuid4().hex[:10]}"
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    yield settings
    Tmux(settings.LAB_TMUX_SOCKET).kill_server()


@pytest.mark.django_db(transaction=True)
async def test_a_bash_permission_prompt_leaves_the_run_needs_input_and_unanswered(
    live_settings,
    claude_home,
    scripted_model,
    authed_client,
    operator,
    tmp_path,
):
    pwned = tmp_path / f"pwned-{uuid.uuid4().hex}"
    scripted_model.script.add(
        tool_use("Bash", {"command": f"touch {pwned}"}, text="Running it."), text("done")
    )
    run = await sync_to_async(services.run_start)(
        provider_id="claude-code", repository=claude_home.worktree, branch="lab/live-bash",
        options={"permission_mode": "default"},
    )  # fmt: skip
    cookie = await sync_to_async(session_cookie)(operator)
    # A page is open the whole time: its socket runs the run's watcher in this process.
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    try:
        await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
        await frames_until(ws, lambda f: '<div id="cursor"' in f, timeout=30)
        await sync_to_async(services.run_reply)(run=run, text="please run the command")
        frames = await frames_until(ws, lambda f: 'data-state="needs_input"' in f, timeout=60)
        panel = frames[-1]
        assert '<form class="dialog dialog-approval"' in panel  # offered to the operator, not answered
        # lab keeps looking: the watcher runs until the socket is quiet, pages reconnect and say
        # hello again, the run page loads. The prompt stays unanswered all along.
        await drain(ws, quiet=2.0)
        for _ in range(3):
            await ws.disconnect()
            ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
            await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
            frames = await frames_until(ws, lambda f: 'data-state="needs_input"' in f, timeout=30)
            assert '<form class="dialog dialog-approval"' in frames[-1]
            body = (await sync_to_async(authed_client.get)(f"/runs/{run.pk}/")).content.decode()
            assert 'data-state="needs_input"' in body and "tmux -L" in body  # the attach command too
        later = "".join(await drain(ws, quiet=2.0))
        assert set(re.findall(r'id="panel" class="panel" data-state="(\w+)"', later)) <= {"needs_input"}
    finally:
        await ws.disconnect()
    assert not pwned.exists()
    assert Tmux(run.tmux_socket).has_session(run.tmux_session)
