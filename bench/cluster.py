"""Real parts for the scale-out benchmark and test: a private redis-server, a throwaway
PostgreSQL cluster (scripts/test-postgres), and helpers that look at the watch leases."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench.common import ROOT, free_port


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A private redis-server on a free port, no persistence. Yields its REDIS_URL."""
    binary = shutil.which("redis-server")
    if not binary:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway cluster on a free port (never the suite's 54329). Yields its DATABASE_URL."""
    pg_dir = Path(tempfile.mkdtemp(prefix="lab-bench-pg-"))
    env = {**os.environ, "LAB_TEST_PG_PORT": str(free_port())}
    script = ROOT / "scripts" / "test-postgres"
    try:
        out = subprocess.run(
            [str(script), "start", str(pg_dir)], env=env, check=True, capture_output=True, text=True
        ).stdout
        url = out.strip().split("DATABASE_URL=", 1)[1].strip("'\"")
        yield url
    finally:
        subprocess.run([str(script), "stop", str(pg_dir)], env=env, capture_output=True, check=False)
        shutil.rmtree(pg_dir, ignore_errors=True)


def lease_holders(run_id: int) -> dict[str, int]:
    """Who holds watch leases, as PostgreSQL sees it: granted advisory locks whose key names the
    run, and sessions named lab-watch-<id> (live/leases.py's application_name)."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = %s", [run_id]
        )
        locks = cur.fetchone()[0]
        cur.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", [f"lab-watch-{run_id}"])
        pids = sorted(row[0] for row in cur.fetchall())
    return {"advisory_locks": locks, "watch_sessions": len(pids), "pids": pids}


def lease_holder_pid(run_id: int, candidates: list[int]) -> int | None:
    """Which of `candidates` (OS pids of lab workers) holds the run's watch lease: the client
    end of the PostgreSQL session granted the run's advisory lock (live/leases.py) is a TCP
    socket one of them owns. None when no session holds it, or none of them owns that one."""
    from django.db import connection

    from live.leases import LOCK_NAMESPACE

    with connection.cursor() as cur:
        cur.execute(
            "SELECT a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s",
            [LOCK_NAMESPACE, run_id],
        )
        ports = [row[0] for row in cur.fetchall()]
    if len(ports) != 1 or not ports[0] or ports[0] < 0:
        return None
    inodes = _local_port_inodes(ports[0])
    for pid in candidates:
        with contextlib.suppress(OSError):
            fd_dir = Path(f"/proc/{pid}/fd")
            for fd in fd_dir.iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return pid
    return None


def _local_port_inodes(port: int) -> set[str]:
    """The socket inodes ("socket:[N]") of TCP sockets bound locally to `port`."""
    out: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    out.add(f"socket:[{fields[9]}]")
    return out
