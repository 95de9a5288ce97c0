# ruff: noqa: E501  (benchmark tables and fixture-shaped literals read better unwrapped)
"""1. Append → browser latency under daphne, with a naive 500 ms re-read poller on the same appends.

A writer process appends Claude Code 2.1.328 assistant entries whose text carries the append's
CLOCK_MONOTONIC timestamp; logged-in websocket clients (one per run, after `hello`) record when a
frame containing each marker arrives. The baseline poller runs concurrently, in its own
process, on the same files: every 500 ms it re-reads and re-parses the whole transcript (the
common approach) and records when it first sees each marker.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from bench.common import (
    MARK_RE,
    PY,
    ROOT,
    WS,
    Daphne,
    append_marker,
    django_setup,
    emit,
    kill_tmux_server,
    lab_env,
    make_live_run,
    make_operator_cookie,
    pct,
    tmpdir,
    write_transcript,
)

SEQ_RE = re.compile(rb'<li id="msg-\w+-(\d+)"')
POLL_MS = 500


def cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid: int) -> float:
    return sum(cpu_split(pid))


def rss_mb(pid: int | None) -> float:
    """A process's resident set size now (MB)."""
    if not pid:
        return 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- the writer and the baseline poller: separate processes ----------------------------------


def writer_main(spec: dict) -> None:
    paths = [Path(p) for p in spec["paths"]]
    interval = spec["interval_s"]
    n = spec["appends"]
    t0 = time.monotonic() + 0.2
    for k in range(n):
        for r, path in enumerate(paths):
            target = t0 + k * interval + r * interval / len(paths)
            delay = target - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            append_marker(path, r, k, with_bookkeeping=k % 10 == 9)


def poller_main(spec: dict) -> None:
    """The naive baseline: every POLL_MS, re-read + re-parse every whole file."""
    sys.path.insert(0, str(ROOT))
    from providers.claude_code.transcript import read_transcript
    from providers.schema import Cursor

    paths = spec["paths"]
    seen: set[tuple[int, int]] = set()
    lat: list[float] = []
    parse: list[float] = []
    print("ready", flush=True)
    stop = time.monotonic() + spec["duration_s"]
    nxt = time.monotonic()
    while time.monotonic() < stop:
        nxt += POLL_MS / 1000
        for path in paths:
            t = time.perf_counter()
            read = read_transcript(path, Cursor(path=path))
            parse.append((time.perf_counter() - t) * 1000)
            now = time.monotonic_ns()
            for m in read.messages:
                hit = MARK_RE.search(m.text.encode())
                if hit:
                    key = (int(hit.group(1)), int(hit.group(2)))
                    if key not in seen:
                        seen.add(key)
                        lat.append((now - int(hit.group(3))) / 1e6)
        delay = nxt - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print(json.dumps({"latencies_ms": lat, "parse_ms": parse, "seen": len(seen)}), flush=True)


def _spawn(role: str, spec: dict) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PY, "-m", "bench.latency", role, json.dumps(spec)], cwd=ROOT, stdout=subprocess.PIPE
    )


# -- the measurement --------------------------------------------------------------------------


WARM_N = 999_999  # the warm-up append's number, outside every measured one


async def measure(
    port: int,
    cookie: str,
    runs: list[tuple[int, Path]],
    *,
    appends: int,
    interval_s: float,
    baseline: bool = True,
    origin: str | None = None,
    grace_s: float = 5.0,
    server_pid: int | None = None,
) -> dict:
    """Sockets on `port` (one per run), the writer and (optionally) the poller. Counts each
    marker's frames: lost = never received, duplicated = received in more than one frame."""
    origin = origin or f"http://127.0.0.1:{port}"
    rss_before = rss_mb(server_pid)  # no watcher, no index, no socket yet
    sockets = []
    for run_id, _path in runs:
        ws = await WS.connect(port, f"/ws/runs/{run_id}/", origin=origin, cookie=cookie)
        await ws.send_json({"type": "hello", "epoch": "", "seq": -1})
        first = await asyncio.wait_for(ws.recv(), 10)
        assert first and b"transcript" in first, first
        sockets.append(ws)
    expected = {(r, k) for r in range(len(runs)) for k in range(appends)}
    counts: Counter[tuple[int, int]] = Counter()
    latencies: list[float] = []
    by_append: list[tuple[int, int, float]] = []  # (append number, run, latency ms)
    seqs: list[Counter[int]] = [Counter() for _ in runs]
    panels = [0] * len(runs)
    done = asyncio.Event()
    warm, warm_keys, warm_seen = asyncio.Event(), {(r, WARM_N) for r in range(len(runs))}, set()

    async def reader(i: int, ws: WS) -> None:
        while True:
            frame = await ws.recv()
            now = time.monotonic_ns()
            if frame is None:
                return
            if b'id="panel"' in frame:
                panels[i] += 1
            for s in SEQ_RE.findall(frame):
                seqs[i][int(s)] += 1
            for hit in MARK_RE.finditer(frame):
                key = (int(hit.group(1)), int(hit.group(2)))
                if key in warm_keys:
                    warm_seen.add(key)
                    if warm_keys <= warm_seen:
                        warm.set()
                    continue
                counts[key] += 1
                if counts[key] == 1:
                    latencies.append((now - int(hit.group(3))) / 1e6)
                    by_append.append((key[1], key[0], latencies[-1]))
            if expected.issubset(counts.keys()):
                done.set()

    tasks = [asyncio.create_task(reader(i, ws)) for i, ws in enumerate(sockets)]
    paths = [str(p) for _, p in runs]
    # One append per run seen on its page before the measured window: each run's watcher has
    # then made its first wake and its exit watch (at 200 runs that took the first seconds, in
    # which every wake asked tmux whether the run was alive). Steady state is what is measured;
    # the warm-up's own latency is reported apart.
    t_warm = time.monotonic()
    for i, path in enumerate(paths):
        append_marker(Path(path), i, WARM_N)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(warm.wait(), 60)
    warm_s = time.monotonic() - t_warm
    duration = appends * interval_s
    cpu0 = cpu_seconds(server_pid) if server_pid else 0.0
    sys0 = cpu_split(server_pid)[1] if server_pid else 0.0
    own0, kids0 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    poller = _spawn("poller", {"paths": paths, "duration_s": duration + 1.5}) if baseline else None
    if poller:  # ready (imports done) before the first append, or its first latencies lie
        await asyncio.get_running_loop().run_in_executor(None, poller.stdout.readline)
    writer = _spawn("writer", {"paths": paths, "interval_s": interval_s, "appends": appends})
    await asyncio.get_running_loop().run_in_executor(None, writer.wait)
    write_s = time.monotonic() - t0
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), grace_s)
    rss_after = rss_mb(server_pid)
    cpu = (cpu_seconds(server_pid) - cpu0) if server_pid else 0.0
    sys_cpu = (cpu_split(server_pid)[1] - sys0) if server_pid else 0.0
    wall = time.monotonic() - t0
    for t in tasks:
        t.cancel()
    for ws in sockets:
        await ws.close()
    own = time.process_time() - own0
    base: dict = {}
    if poller:
        out, _ = await asyncio.get_running_loop().run_in_executor(None, poller.communicate)
        base = json.loads(out)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the writer and the poller, reaped
    kids_cpu = kids.ru_utime + kids.ru_stime - kids0.ru_utime - kids0.ru_stime
    dup_seq = sum(1 for c in seqs for v in c.values() if v > 1)
    gaps = 0
    for c in seqs:
        if c:
            lo, hi = min(c), max(c)
            gaps += sum(1 for s in range(lo, hi + 1) if s not in c)
    result = {
        "runs": len(runs),
        "appends": len(expected),
        "rate_per_run_hz": round(1 / interval_s, 1),
        "write_s": round(write_s, 2),
        "received": len(counts),
        "lost": len(expected - counts.keys()),
        "duplicated": sum(1 for v in counts.values() if v > 1),
        "dup_seq": dup_seq,
        "seq_gaps": gaps,
        "panel_frames": sum(panels),
        "p50": pct(latencies, 50),
        "p95": pct(latencies, 95),
        "p99": pct(latencies, 99),
        "max": max(latencies) if latencies else float("nan"),
        "server_cpu_pct": round(100 * cpu / wall, 1) if server_pid else None,
        "server_sys_pct": round(100 * sys_cpu / wall, 1) if server_pid else None,
        "server_cpu_ms_per_append": round(1000 * cpu / len(expected), 2) if server_pid else None,
        "wall_s": round(wall, 2),
        "warm_s": round(warm_s, 2),  # one append per run, all seen (before the measured window)
        # Memory per live run: daphne's RSS growth from before the first socket (no watcher,
        # no index) to the end, divided by the runs (each with a watcher, an index and a socket).
        "server_rss_before_mb": round(rss_before, 1),
        "server_rss_after_mb": round(rss_after, 1),
        "rss_per_run_kb": round(1024 * (rss_after - rss_before) / max(1, len(runs)), 1),
        # The rest of the 2-core machine's load from this benchmark: the websocket client
        # (this process) and the writer + poller processes.
        "client_cpu_pct": round(100 * own / wall, 1),
        "writer_poller_cpu_pct": round(100 * kids_cpu / wall, 1),
        "load_avg_during": os.getloadavg()[0],
    }
    if os.environ.get("BENCH_DUMP"):  # every latency, for a look at how it evolves in the run
        Path(os.environ["BENCH_DUMP"]).write_text(json.dumps(sorted(by_append)))
    if base:
        bl = base["latencies_ms"]
        result.update(
            base_p50=pct(bl, 50), base_p95=pct(bl, 95), base_p99=pct(bl, 99),
            base_seen=base["seen"], base_parse_ms_p50=pct(base["parse_ms"], 50),
        )  # fmt: skip
    return result


def baseline_alone(paths: list[Path], *, appends: int, interval_s: float) -> dict:
    """The naive poller alone (lab stopped) on fresh copies of the runs' starting transcripts,
    with the same writer: its figures without lab competing for the 2 cores, and lab's without
    it (run concurrently, the poller's whole-file re-parse every 500 ms — tens of ms of CPU
    per burst at 50 runs, growing with the files — stalled lab's frames behind it)."""
    fresh = []
    for p in paths:
        q = p.with_name(f"baseline-{p.name}")
        q.write_bytes(p.read_bytes().split(b"\n", 1)[0] + b"\n")
        fresh.append(str(q))
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    poller = _spawn("poller", {"paths": fresh, "duration_s": appends * interval_s + 1.5})
    assert poller.stdout is not None
    poller.stdout.readline()  # ready (imports done) before the first append
    writer = _spawn("writer", {"paths": fresh, "interval_s": interval_s, "appends": appends})
    writer.wait()
    out, _ = poller.communicate()
    base = json.loads(out)
    bl = base["latencies_ms"]
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "base_p50": pct(bl, 50), "base_p95": pct(bl, 95), "base_p99": pct(bl, 99),
        "base_seen": base["seen"], "base_parse_ms_p50": pct(base["parse_ms"], 50),
        "base_cpu_s": round(kids.ru_utime + kids.ru_stime - kids0.ru_utime - kids0.ru_stime, 2),
    }  # fmt: skip


def scenario(
    runs: int,
    appends: int,
    interval_s: float,
    label: str,
    patch: str = "",
    baseline: str = "sequential",
    burn: int = 0,
    prefill_mb: float = 0,
) -> dict:
    # `burn` CPU-bound processes for the whole scenario (lab's phase and the baseline's): a busy
    # machine, reproducibly (on 2 cores, one of them leaves lab and the bench one core).
    burners = [subprocess.Popen([PY, "-c", "while True: pass"]) for _ in range(burn)]
    try:
        return _scenario(runs, appends, interval_s, label, patch, baseline, prefill_mb) | {
            "burn": burn,
            "prefill_mb": prefill_mb,
        }
    finally:
        for b in burners:
            b.kill()
            b.wait()


def _scenario(
    runs: int, appends: int, interval_s: float, label: str, patch: str, baseline: str, prefill_mb: float = 0
) -> dict:
    with tmpdir("lab-bench-lat-") as tmp:
        env = lab_env(tmp, BENCH_PATCH=patch)
        django_setup()
        cookie = make_operator_cookie()
        made = [make_live_run(i, tmp) for i in range(runs)]
        if prefill_mb:  # each transcript starts this big: memory must not grow with it
            history = tmp / "history.jsonl"
            write_transcript(history, target_bytes=int(prefill_mb * 2**20))
            data = history.read_bytes()
            for _, path in made:
                with open(path, "ab") as f:
                    f.write(data)
        # Unpatched: `manage.py serve`, exactly as users run it; patched: bench.worker.
        argv = [PY, "-m", "bench.worker"] if patch else None
        server = Daphne(env, argv=argv, log=tmp / "daphne.log").start()
        spy = None
        if os.environ.get("BENCH_PROFILE"):  # py-spy on the daphne process, raw collapsed stacks
            spy = subprocess.Popen(
                [str(Path(PY).with_name("py-spy")), "record", "-p", str(server.proc.pid), "-r", os.environ.get("BENCH_PROFILE_RATE", "250"),
                 "-f", "raw", "-o", f"{os.environ['BENCH_PROFILE']}-{runs}.txt", *(
                     ["--idle"] if os.environ.get("BENCH_PROFILE_IDLE") else []),
                 *shlex.split(os.environ.get("BENCH_PROFILE_ARGS", "--nonblocking --gil"))],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        try:
            res = asyncio.run(
                measure(server.port, cookie, made, appends=appends, interval_s=interval_s, baseline=baseline == "concurrent",
                        server_pid=server.proc.pid if server.proc else None)
            )  # fmt: skip
        finally:
            if spy:
                spy.send_signal(2)
                spy.wait(30)
            server.stop()
            kill_tmux_server(env["LAB_TMUX_SOCKET"])
        if baseline == "sequential":
            res.update(baseline_alone([p for _, p in made], appends=appends, interval_s=interval_s))
        res["baseline_mode"] = baseline
        res["label"] = label
        return res


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] in ("writer", "poller"):
        spec = json.loads(sys.argv[2])
        (writer_main if sys.argv[1] == "writer" else poller_main)(spec)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--appends", type=int, default=500)
    ap.add_argument("--rate", type=float, default=20.0, help="appends per second per run")
    ap.add_argument("--patch", default="", help="bench.worker patches (the proposed fixes)")
    ap.add_argument(
        "--baseline", choices=("sequential", "concurrent", "none"), default="sequential",
        help="the naive poller: right after lab, alone, on fresh files with the same writer "
        "(default); at the same time as lab, on the same appends; or not at all",
    )  # fmt: skip
    ap.add_argument("--burn", type=int, default=0, help="CPU-bound processes running alongside")
    ap.add_argument("--prefill-mb", type=float, default=0, help="each transcript's size before the appends")
    args = ap.parse_args()
    res = scenario(
        args.runs,
        args.appends,
        1 / args.rate,
        f"latency-{args.runs}",
        args.patch,
        args.baseline,
        args.burn,
        args.prefill_mb,
    )
    res["patch"] = args.patch
    res["load_avg"] = os.getloadavg()[0]
    emit(res)


if __name__ == "__main__":
    main()
