"""1. Memory per run against transcript size: what one run's TranscriptIndex holds, by tracemalloc.

For each size, a synthetic Claude Code transcript is written once and indexed by RUNS separate
indexes (as RUNS live runs' watchers would, each its own parse): the traced bytes they keep,
divided by RUNS, is the index's memory per run. Unlike daphne's RSS (bench.latency
--prefill-mb) it does not move with the allocator's arenas or other work on the machine, and it
isolates the part of a run's memory that could grow with its transcript: the bounded tail and
the checkpoints (one per CHECKPOINT messages, each a cursor with the reader's state).

  python -m bench.index_memory [--runs 200] [--sizes 0.5,2,6] [--dense]
"""

from __future__ import annotations

import argparse
import gc
import os
import tracemalloc
from pathlib import Path

from bench.common import django_setup, emit, lab_env, tmpdir, write_transcript


def per_run(path: Path, runs: int) -> dict[str, float]:
    from providers.registry import get_provider
    from runs.transcripts import TranscriptIndex

    provider = get_provider("claude-code")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    indexes = []
    for _ in range(runs):
        index = TranscriptIndex(provider, str(path))
        index.advance()
        indexes.append(index)
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    last = indexes[-1]
    return {
        "kb_per_run": round(kept / runs / 1024, 1),
        "messages": last.cursor.next_seq,
        "checkpoints": len(last.checkpoints),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--sizes", default="0.5,2,6", help="transcript sizes in MB")
    ap.add_argument("--dense", action="store_true", help="bookkeeping every 20 turns (more messages per MB)")
    args = ap.parse_args()
    out: dict[str, object] = {}
    with tmpdir("lab-bench-memory-") as tmp:
        lab_env(tmp)
        django_setup(migrate=False)
        for size in args.sizes.split(","):
            path = tmp / f"t{size}.jsonl"
            write_transcript(
                path, target_bytes=int(float(size) * 2**20), bookkeeping_every=20 if args.dense else 1
            )
            out[size] = {"mb": round(os.path.getsize(path) / 2**20, 2), **per_run(path, args.runs)}
    emit({"index_memory": out, "runs": args.runs, "dense": args.dense})


if __name__ == "__main__":
    main()
