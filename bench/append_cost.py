"""1. CPU per appended line, without daphne and without batching: one live run, one socket.

In one process: the run's watcher (inotify on this loop), the in-memory channel layer and the
run's RunConsumer under channels' WebsocketCommunicator. Each append waits until its frame
reached the socket before the next, so no wake covers two appends (under load the latency
bench's wakes do, which makes its CPU per append look cheaper). Reported: this process's CPU
per append (process_time), which is lab's path from the inotify event to the frame handed to
the server, without daphne's framing and socket write. Run it under
`valgrind --tool=callgrind` with `--appends 0` and `--appends N` for instruction counts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import time

from bench.common import (
    MARK_RE,
    append_marker,
    django_setup,
    emit,
    kill_tmux_server,
    lab_env,
    make_live_run,
    tmpdir,
    write_transcript,
)


def callgrind(on: bool) -> None:
    """Under `valgrind --tool=callgrind --instr-atstart=no`: count only the measured appends."""
    if os.environ.get("BENCH_CALLGRIND"):
        subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(os.getpid())], check=True)


async def measure(run_id: int, path: os.PathLike[str], appends: int, sockets: int = 1) -> float:
    from asgiref.sync import sync_to_async
    from channels.testing import WebsocketCommunicator
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    from live.consumers import RunConsumer

    user = await get_user_model().objects.acreate(username="bench")
    # A socket is refused without a session (it lives no longer than its login), and one whose
    # session no longer logs its user in is closed when rechecked (every 15 s: under callgrind
    # the measured appends outlast that).
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    await sync_to_async(session.save)()
    pages = []
    for _ in range(sockets):  # the run's page open in this many tabs
        ws = WebsocketCommunicator(RunConsumer.as_asgi(), f"/ws/runs/{run_id}/")
        ws.scope["user"] = user
        ws.scope["session"] = session
        ws.scope["url_route"] = {"kwargs": {"run_id": run_id}}
        connected, _ = await ws.connect()
        assert connected
        await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
        assert "transcript" in await ws.receive_from(10)
        pages.append(ws)

    async def one(ws: WebsocketCommunicator, n: int) -> None:
        while True:
            frame = await ws.receive_from(10)
            if any(int(m.group(2)) == n for m in MARK_RE.finditer(frame.encode())):
                return

    async def until(n: int) -> None:
        await asyncio.gather(*(one(ws, n) for ws in pages))

    for k in range(20):  # warm: the first wakes read in a thread and start the pidfd watch
        append_marker(path, 0, k)
        await until(k)
    callgrind(True)
    cpu = time.process_time()
    for k in range(20, 20 + appends):
        append_marker(path, 0, k)
        await until(k)
    cpu = time.process_time() - cpu
    callgrind(False)
    for ws in pages:
        await ws.disconnect()
    return 1000 * cpu / max(1, appends)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--appends", type=int, default=400)
    ap.add_argument("--sockets", type=int, default=1, help="sockets on the run (pages open on it)")
    ap.add_argument(
        "--prefill-mb",
        type=float,
        default=0,
        help="the transcript's size before the appends (a long run's reader state)",
    )
    args = ap.parse_args()
    with tmpdir("lab-bench-append-") as tmp:
        env = lab_env(tmp)
        django_setup()
        run_id, path = make_live_run(0, tmp)
        if args.prefill_mb:
            history = tmp / "history.jsonl"
            write_transcript(history, target_bytes=int(args.prefill_mb * 2**20))
            with open(path, "ab") as f:
                f.write(history.read_bytes())
        try:
            ms = asyncio.run(measure(run_id, path, args.appends, args.sockets))
        finally:
            kill_tmux_server(env["LAB_TMUX_SOCKET"])
    emit(
        {
            "append_cost": {"cpu_ms_per_append": round(ms, 4), "appends": args.appends},
            "load_avg": os.getloadavg()[0],
        }
    )


if __name__ == "__main__":
    main()
