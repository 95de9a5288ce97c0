"""A run nobody watches costs no rendering: 200 live runs, their watchers running in this
process (as a runs-list page's socket starts them) on the in-memory layer, no socket on any run.
Each run gets a turn: the operator's line (working), 10 of the agent's lines. Counted: every
panel and message rendered, and this process's CPU per appended line.

  python -m bench.unwatched     one BENCH-RESULT line
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

from bench.common import (
    append_marker,
    django_setup,
    emit,
    kill_tmux_server,
    lab_env,
    make_live_run,
    tmpdir,
    user_line,
)


async def measure(runs: list[tuple[int, Path]], lines: int) -> tuple[int, float]:
    from live import watcher as watcher_module
    from runs import rendering

    rendered = [0]
    real_render, real_message = watcher_module.render, rendering._render

    def render(name: str, context: dict[str, object]) -> str:
        rendered[0] += 1
        return real_render(name, context)

    def message(*args: object) -> str:
        rendered[0] += 1
        return real_message(*args)  # type: ignore[arg-type]

    watcher_module.render = render  # type: ignore[assignment]
    rendering._render = message  # type: ignore[assignment]
    watchers = [watcher_module.ensure_watcher(run_id) for run_id, _ in runs]

    async def until(seq: int) -> None:
        deadline = time.monotonic() + 120
        while any(w.next_seq < seq for w in watchers):
            assert time.monotonic() < deadline, "watchers did not catch up"
            await asyncio.sleep(0.01)

    await until(1)  # each watcher's first read (the run's first line)
    rendered[0] = 0
    cpu = time.process_time()
    for _, path in runs:
        with open(path, "ab") as f:
            f.write(user_line("another turn") + b"\n")
    for n in range(lines):
        for i, (_, path) in enumerate(runs):
            append_marker(path, i, n)
        await asyncio.sleep(0.1)  # 10 lines/s per run
    await until(2 + lines)
    cpu = time.process_time() - cpu
    for w in watchers:
        if w.task:
            w.task.cancel()
    return rendered[0], 1000 * cpu / (len(runs) * (lines + 1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--lines", type=int, default=10)
    args = ap.parse_args()
    with tmpdir("lab-bench-unwatched-") as tmp:
        env = lab_env(tmp)
        django_setup()
        try:
            runs = [make_live_run(i, tmp) for i in range(args.runs)]
            rendered, ms = asyncio.run(measure(runs, args.lines))
        finally:
            kill_tmux_server(env["LAB_TMUX_SOCKET"])
    emit(
        {
            "unwatched": {"runs": args.runs, "appends": args.runs * (args.lines + 1), "rendered": rendered,
                          "cpu_ms_per_append": round(ms, 4)},
            "load_avg": os.getloadavg()[0],
        }
    )  # fmt: skip


if __name__ == "__main__":
    main()
