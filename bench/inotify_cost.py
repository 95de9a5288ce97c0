"""lab's inotify hub (live/inotify.py, ctypes) against asyncinotify, on the same event stream.

A writer process appends one line at a time to files in `--dirs` directories at `--rate`
appends/s; this process reads the events on its asyncio loop with one implementation, calling
one callback per directory as the watchers do, until it has seen every append. Reported: this
process's CPU per append for each, alternated over `--rounds` rounds (the median), so that
both see the same machine load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import PY, ROOT, emit, tmpdir


def writer_main(spec: dict) -> None:
    paths = spec["paths"]
    interval = 1 / spec["rate"]
    t0 = time.monotonic() + 0.1
    for k in range(spec["appends"]):
        delay = t0 + k * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        fd = os.open(paths[k % len(paths)], os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b'{"type":"assistant"}\n')
        finally:
            os.close(fd)


async def lab_hub(dirs: list[str], on_event: Callable[[str], None], stop: asyncio.Event) -> None:
    from live.inotify import hub

    inotify = hub()
    callbacks = []
    for d in dirs:

        def changed(name: str, d: str = d) -> None:
            on_event(name)

        inotify.add(d, changed)
        callbacks.append((d, changed))
    try:
        await stop.wait()
    finally:
        for d, cb in callbacks:
            inotify.remove(d, cb)


async def asyncinotify_hub(dirs: list[str], on_event: Callable[[str], None], stop: asyncio.Event) -> None:
    from asyncinotify import Inotify, Mask

    from live.inotify import DIR_MASK

    with Inotify() as inotify:
        by_wd = {}
        for d in dirs:

            def changed(name: str, d: str = d) -> None:
                on_event(name)

            by_wd[inotify.add_watch(d, Mask(DIR_MASK)).wd] = changed

        async def pump() -> None:
            async for event in inotify:
                watch = event.watch
                if watch is not None:
                    by_wd[watch.wd](str(event.name or ""))

        task = asyncio.create_task(pump())
        await stop.wait()
        task.cancel()


IMPLEMENTATIONS = {"lab": lab_hub, "asyncinotify": asyncinotify_hub}


async def one_round(kind: str, tmp: Path, dirs: int, n: int, rate: float) -> float:
    paths = []
    for i in range(dirs):
        d = tmp / f"{kind}-{time.monotonic_ns()}-{i}"
        d.mkdir()
        (d / "t.jsonl").write_bytes(b"")
        paths.append(str(d / "t.jsonl"))
    seen = 0
    stop = asyncio.Event()

    def on_event(name: str) -> None:
        nonlocal seen
        if name == "t.jsonl":
            seen += 1
            # Each append is one open-write-close: IN_MODIFY and IN_CLOSE_WRITE.
            if seen >= 2 * n:
                stop.set()

    reader = asyncio.create_task(IMPLEMENTATIONS[kind]([os.path.dirname(p) for p in paths], on_event, stop))
    await asyncio.sleep(0.05)  # the watches are in place
    cpu0 = time.process_time()
    writer = subprocess.Popen(
        [
            PY,
            "-m",
            "bench.inotify_cost",
            "writer",
            json.dumps({"paths": paths, "rate": rate, "appends": n}),
        ],
        cwd=ROOT,
    )
    await asyncio.wait_for(stop.wait(), n / rate + 30)
    cpu = time.process_time() - cpu0
    await reader
    await asyncio.get_running_loop().run_in_executor(None, writer.wait)
    return 1000 * cpu / n


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "writer":
        writer_main(json.loads(sys.argv[2]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--dirs", type=int, default=200)
    ap.add_argument("--appends", type=int, default=6000)
    ap.add_argument("--rate", type=float, default=2000.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    results: dict[str, list[float]] = {kind: [] for kind in IMPLEMENTATIONS}
    with tmpdir("lab-bench-inotify-") as tmp:
        for _ in range(args.rounds):
            for kind in IMPLEMENTATIONS:
                results[kind].append(asyncio.run(one_round(kind, tmp, args.dirs, args.appends, args.rate)))
    emit({
        "inotify": {kind: round(statistics.median(v), 4) for kind, v in results.items()},
        "all": results, "dirs": args.dirs, "appends": args.appends, "rate": args.rate,
        "load_avg": os.getloadavg()[0],
    })  # fmt: skip


if __name__ == "__main__":
    main()
