"""6. Scale-out on real parts: two daphne workers (`manage.py serve`) sharing PostgreSQL and a
private redis-server. A socket on worker A makes A watch the run; the measured socket is on
worker B, so every append reaches it through Redis. Then A is SIGKILLed mid-stream and the
appends keep coming: B's standby watcher must take over (the lease's retry) with no gap."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

from bench.cluster import lease_holders, postgres_server, redis_server
from bench.common import (
    WS,
    Daphne,
    django_setup,
    emit,
    free_port,
    kill_tmux_server,
    lab_env,
    make_live_run,
    make_operator_cookie,
    tmpdir,
)
from bench.latency import measure


async def _drain(ws: WS) -> None:
    with contextlib.suppress(Exception):
        while await ws.recv() is not None:
            pass


async def _keep(port: int, run_id: int, cookie: str) -> tuple[WS, asyncio.Task[None]]:
    ws = await WS.connect(port, f"/ws/runs/{run_id}/", origin=f"http://127.0.0.1:{port}", cookie=cookie)
    await ws.send_json({"type": "hello", "epoch": "", "seq": -1})
    return ws, asyncio.create_task(_drain(ws))


async def scenario(
    env_a: dict[str, str], env_b: dict[str, str], cookie: str, runs, tmp, appends: int
) -> dict:  # type: ignore[no-untyped-def]
    from asgiref.sync import sync_to_async

    a = Daphne(env_a, log=tmp / "a.log").start()
    b = Daphne(env_b, log=tmp / "b.log").start()
    out: dict[str, object] = {}
    try:
        run_id = runs[0][0]
        keep_a = await _keep(a.port, run_id, cookie)  # A watches (takes the lease first)
        await asyncio.sleep(1.0)
        keep_b = await _keep(b.port, run_id, cookie)  # B's watcher stands by
        await asyncio.sleep(0.5)
        out["leases_before"] = await sync_to_async(lease_holders)(run_id)
        steady = await measure(b.port, cookie, runs, appends=appends, interval_s=0.05, baseline=False)
        out["steady"] = steady
        # Takeover: SIGKILL the watching worker, keep appending at 10 Hz.
        assert a.proc is not None
        before = await sync_to_async(lease_holders)(run_id)
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait()
        t_kill = time.monotonic()
        # The lease moves when A's PostgreSQL session dies and B's retry (LEASE_RETRY_S) wins it.
        held_again = None
        while time.monotonic() - t_kill < 15:
            holders = await sync_to_async(lease_holders)(run_id)
            if holders["advisory_locks"] == 1 and holders["pids"] != before["pids"]:
                held_again = time.monotonic() - t_kill
                break
            await asyncio.sleep(0.05)
        out["lease_takeover_s"] = held_again
        takeover = await measure(
            b.port, cookie, runs, appends=int(os.environ.get("BENCH_TAKEOVER_APPENDS", "80")),
            interval_s=0.1, baseline=False, grace_s=10,
        )  # fmt: skip
        takeover["since_kill_s"] = round(time.monotonic() - t_kill, 2)
        out["takeover"] = takeover
        out["leases_after"] = await sync_to_async(lease_holders)(run_id)
        for ws, task in (keep_a, keep_b):
            task.cancel()
            await ws.close()
    finally:
        a.stop()
        b.stop()
    return out


def main() -> None:
    with tmpdir("lab-bench-scale-") as tmp, postgres_server() as db_url, redis_server() as redis_url:
        port_a, port_b = free_port(), free_port()
        env_a = lab_env(tmp, port=port_a, DATABASE_URL=db_url, REDIS_URL=redis_url)
        env_b = {**env_a, "LAB_BIND": f"127.0.0.1:{port_b}"}
        django_setup()
        cookie = make_operator_cookie()
        runs = [make_live_run(0, tmp)]
        try:
            res = asyncio.run(
                scenario(env_a, env_b, cookie, runs, tmp, int(os.environ.get("BENCH_SCALE_APPENDS", "300")))
            )
        finally:
            kill_tmux_server(env_a["LAB_TMUX_SOCKET"])
        emit({"scaleout": res})


if __name__ == "__main__":
    main()
