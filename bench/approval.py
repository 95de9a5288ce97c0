# ruff: noqa: E501  (benchmark tables and fixture-shaped literals read better unwrapped)
"""7. Hook → browser: a tool-permission prompt reaches the page as needs_input with its dialog.

A live claude-code run (a dummy pane, a real spool dir) is watched by daphne (`manage.py
serve`) with one logged-in websocket client. Each trial runs lab's real hook command
(providers/hook_writer.py, as the CLI runs it) with a PreToolUse payload, then —
timed from just before it is spawned — with the PermissionRequest payload the CLI sends before
it draws the prompt; it stops when a frame carrying the approval dialog for that command (its
needs_input panel) arrives. A PostToolUse then clears it for the next trial.

The baseline is what lab did before: needs_input only from the `permission_prompt`
Notification, which 2.1.328 sends about 6 s after the prompt is drawn (compat §8, live); the
same hook → browser path is measured for that Notification here, and the CLI's own delay is
added as observed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import (
    ROOT,
    WS,
    Daphne,
    django_setup,
    emit,
    kill_tmux_server,
    lab_env,
    make_live_run,
    make_operator_cookie,
    pct,
    tmpdir,
)

HOOK = ROOT / "providers" / "hook_writer.py"
NOTIFICATION_DELAY_S = 6.0  # compat §8: 2.1.328's permission_prompt Notification, ~6 s after the prompt


def hook(spool: Path, payload: dict[str, object]) -> subprocess.Popen[bytes]:
    """lab's hook command exactly as the CLI runs it (`python -S hook_writer.py SPOOL`)."""
    proc = subprocess.Popen([sys.executable, "-S", str(HOOK), str(spool)], stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    return proc


async def until(ws: WS, predicate, timeout: float = 10.0) -> int:  # type: ignore[no-untyped-def]
    """monotonic_ns when a frame satisfying predicate arrived."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = await asyncio.wait_for(ws.recv(), timeout=deadline - time.monotonic())
        if frame is None:
            raise ConnectionError("the socket closed")
        if predicate(frame):
            return time.monotonic_ns()
    raise TimeoutError


async def measure(port: int, cookie: str, run_id: int, spool: Path, trials: int) -> dict[str, object]:
    origin = f"http://127.0.0.1:{port}"
    ws = await WS.connect(port, f"/ws/runs/{run_id}/", origin=origin, cookie=cookie)
    await ws.send_json({"type": "hello", "epoch": "", "seq": -1})
    await asyncio.sleep(1.0)
    base = {"session_id": "bench", "cwd": "/", "permission_mode": "default"}
    approval_ms: list[float] = []
    notification_ms: list[float] = []
    for i in range(trials):
        tool_use_id = f"toolu_bench{i:04d}"
        command = f"touch bench-marker-{i:04d}"
        tool_input = {"command": command, "description": "bench"}
        pre = {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": tool_input,
               "tool_use_id": tool_use_id}  # fmt: skip
        hook(spool, pre).wait()
        await asyncio.sleep(0.2)
        t0 = time.monotonic_ns()
        ask = {**base, "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": tool_input,
               "permission_suggestions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]}  # fmt: skip
        proc = hook(spool, ask)
        marker = command.encode()
        t1 = await until(ws, lambda f, m=marker: b"dialog-approval" in f and m in f)
        proc.wait()
        approval_ms.append((t1 - t0) / 1e6)
        post = {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": tool_input,
                "tool_use_id": tool_use_id, "tool_response": {"stdout": ""}}  # fmt: skip
        hook(spool, post).wait()
        await until(ws, lambda f: b'id="panel"' in f and b"dialog-approval" not in f)
        await asyncio.sleep(0.2)
        # The old signal: a Notification with no PermissionRequest lab can pair (needs_input only).
        t0 = time.monotonic_ns()
        note = {**base, "hook_event_name": "Notification", "notification_type": "permission_prompt",
                "message": "Claude needs your permission"}  # fmt: skip
        proc = hook(spool, note)
        t1 = await until(ws, lambda f: b'data-state="needs_input"' in f)
        proc.wait()
        notification_ms.append((t1 - t0) / 1e6)
        prompt = {**base, "hook_event_name": "UserPromptSubmit", "prompt": "next"}
        hook(spool, prompt).wait()
        await until(ws, lambda f: b'id="panel"' in f and b'data-state="needs_input"' not in f)
        await asyncio.sleep(0.2)
    await ws.close()
    return {
        "trials": trials,
        "p50": pct(approval_ms, 50),
        "p95": pct(approval_ms, 95),
        "max": max(approval_ms),
        "within_1s": sum(1 for v in approval_ms if v <= 1000),
        "notification_p50": pct(notification_ms, 50),
        "notification_p95": pct(notification_ms, 95),
        "cli_notification_delay_s": NOTIFICATION_DELAY_S,
    }


def main() -> None:
    trials = int(os.environ.get("BENCH_APPROVAL_TRIALS", "20"))
    with tmpdir("lab-bench-approval-") as tmp:
        env = lab_env(tmp)
        django_setup()
        from runs import services
        from runs.models import Run

        cookie = make_operator_cookie()
        run_id, _ = make_live_run(0, tmp)
        spool = services.spool_dir(Run.objects.get(pk=run_id))
        server = Daphne(env, log=tmp / "daphne.log").start()
        try:
            result = asyncio.run(measure(server.port, cookie, run_id, spool, trials))
        finally:
            server.stop()
            kill_tmux_server(env["LAB_TMUX_SOCKET"])
    emit({"approval": result})


if __name__ == "__main__":
    main()
