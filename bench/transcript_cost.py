# ruff: noqa: E501  (benchmark tables and fixture-shaped literals read better unwrapped)
"""2. incremental cost, 3. ingest, 4. open — each a subcommand run in a fresh process.

gen PATH --bytes N | --messages N   write a synthetic Claude Code 2.1.328 transcript
incremental SMALL BIG               one appended line: TranscriptIndex.advance vs full re-parse
ingest PATH / ingest-raw PATH       read_transcript from 0 vs line-by-line orjson.loads
open PATH                           GET /runs/<id>/ cold (first in process) and warm
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

from bench.common import (
    append_marker,
    django_setup,
    emit,
    lab_env,
    make_live_run,
    maxrss_mb,
    pct,
    rss_mb,
    tmpdir,
    write_transcript,
)


def cmd_gen(args: argparse.Namespace) -> None:
    t = time.perf_counter()
    info = write_transcript(
        Path(args.path),
        target_bytes=args.bytes,
        target_messages=args.messages,
        bookkeeping_every=args.bookkeeping_every,
    )
    emit({"gen": args.path, **info, "s": round(time.perf_counter() - t, 2)})


def cmd_incremental(args: argparse.Namespace) -> None:
    from providers.claude_code.transcript import read_transcript
    from providers.registry import get_provider
    from providers.schema import Cursor
    from runs.transcripts import TranscriptIndex

    provider = get_provider("claude-code")
    out: dict[str, object] = {}
    for label, path, base_reps in (("small", args.small, 20), ("big", args.big, 3)):
        size = os.path.getsize(path)
        index = TranscriptIndex(provider, path)
        index.advance()  # the first read of a file parses it once
        times = []
        for n in range(args.appends):
            append_marker(Path(path), 0, n)
            before = index.cursor.next_seq
            t = time.perf_counter()
            index.advance()
            times.append((time.perf_counter() - t) * 1000)
            assert index.cursor.next_seq - before == 1, index.cursor.next_seq - before
        base = []
        for n in range(base_reps):  # the common approach: re-read and re-parse the whole file
            append_marker(Path(path), 1, n)
            t = time.perf_counter()
            read_transcript(path, Cursor(path=path))
            base.append((time.perf_counter() - t) * 1000)
        out[label] = {
            "mb": round(size / 2**20, 1),
            "p50_ms": pct(times, 50),
            "p95_ms": pct(times, 95),
            "base_p50_ms": pct(base, 50),
        }
    small, big = out["small"], out["big"]
    assert isinstance(small, dict) and isinstance(big, dict)
    out["ratio"] = big["p50_ms"] / small["p50_ms"]
    out["base_ratio"] = big["base_p50_ms"] / small["base_p50_ms"]
    emit({"incremental": out})


def cmd_ingest(args: argparse.Namespace) -> None:
    from providers.claude_code.transcript import read_transcript
    from providers.schema import Cursor

    size = os.path.getsize(args.path)
    rss0 = rss_mb()
    t = time.perf_counter()
    kw = {"max_bytes": args.max_bytes} if args.max_bytes else {}
    read = read_transcript(args.path, Cursor(path=args.path), **kw)
    s = time.perf_counter() - t
    emit({
        "ingest": f"lab-{args.max_bytes}" if args.max_bytes else "lab", "mb": size / 2**20, "s": s, "mb_s": size / 2**20 / s, "messages": len(read.messages),
        "lines": read.stats.get("lines"), "bookkeeping": read.stats.get("bookkeeping"),
        "peak_rss_mb": maxrss_mb(), "rss_growth_mb": maxrss_mb() - rss0,
    })  # fmt: skip


def cmd_ingest_raw(args: argparse.Namespace) -> None:
    import orjson

    size = os.path.getsize(args.path)
    rss0 = rss_mb()
    t = time.perf_counter()
    n = 0
    with open(args.path, "rb") as f:
        for line in f:
            orjson.loads(line)
            n += 1
    s = time.perf_counter() - t
    emit({"ingest": "raw", "mb": size / 2**20, "s": s, "mb_s": size / 2**20 / s, "lines": n,
          "peak_rss_mb": maxrss_mb(), "rss_growth_mb": maxrss_mb() - rss0})  # fmt: skip


def cmd_open(args: argparse.Namespace) -> None:
    with tmpdir("lab-bench-open-") as tmp:
        lab_env(tmp)
        django_setup()
        from django.contrib.auth import get_user_model
        from django.test import Client

        from providers.claude_code.transcript import read_transcript
        from providers.schema import Cursor
        from runs.models import Run
        from runs.rendering import message_html

        user = get_user_model().objects.create(username="bench", is_staff=True, is_superuser=True)
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        warm_id, _ = make_live_run(0, tmp, sleeper=False)  # warms Django, templates, the adapter
        assert client.get(f"/runs/{warm_id}/").status_code == 200
        big_id, small_path = make_live_run(1, tmp, sleeper=False)
        os.replace(args.path, small_path)  # the big transcript becomes run 1's
        path = str(small_path)
        size = os.path.getsize(path)
        gc.collect()
        rss0, max0, blocks0 = rss_mb(), maxrss_mb(), sys.getallocatedblocks()
        from runs.transcripts import indexed, wait_full_index

        t = time.perf_counter()
        resp = client.get(f"/runs/{big_id}/")
        cold = (time.perf_counter() - t) * 1000
        assert resp.status_code == 200 and b"msg-" in resp.content
        max1 = maxrss_mb()
        provisional = indexed(path)
        # A big file opens on its end; the whole of it is indexed in the background meanwhile.
        wait_full_index(path)
        full_ready_s = time.perf_counter() - t
        max2 = maxrss_mb()
        gc.collect()
        rss1, blocks1 = rss_mb(), sys.getallocatedblocks()
        warm = []
        for _ in range(args.warm):
            t = time.perf_counter()
            assert client.get(f"/runs/{big_id}/").status_code == 200
            warm.append((time.perf_counter() - t) * 1000)
        # Baseline: what every open costs when nothing is kept (re-parse, render the last page).
        base = []
        for _ in range(2):
            t = time.perf_counter()
            read = read_transcript(path, Cursor(path=path))
            "".join(message_html(m, "e") for m in read.messages[-60:])
            base.append((time.perf_counter() - t) * 1000)
            del read
        run = Run.objects.get(pk=big_id)
        from runs.transcripts import transcript_index

        index = transcript_index(run)
        emit({
            "open": True, "mb": size / 2**20, "messages": index.cursor.next_seq,
            "checkpoints": len(index.checkpoints), "cold_ms": cold, "warm_p50_ms": pct(warm, 50),
            "warm_p95_ms": pct(warm, 95), "base_ms": pct(base, 50),
            "rss_retained_mb": rss1 - rss0, "live_blocks_retained": blocks1 - blocks0, "peak_growth_mb": max1 - max0,
            "provisional": bool(provisional and provisional.head_unread),
            "cold_messages_indexed": provisional.cursor.next_seq if provisional else 0,
            "full_index_ready_s": full_ready_s, "peak_growth_with_full_index_mb": max2 - max0,
        })  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("path")
    g.add_argument("--bytes", type=int, default=0)
    g.add_argument("--messages", type=int, default=0)
    g.add_argument("--bookkeeping-every", type=int, default=1)
    i = sub.add_parser("incremental")
    i.add_argument("small")
    i.add_argument("big")
    i.add_argument("--appends", type=int, default=200)
    for name in ("ingest", "ingest-raw"):
        sp = sub.add_parser(name)
        sp.add_argument("path")
        sp.add_argument("--max-bytes", type=int, default=0, help="read_transcript's per-pass budget")
    o = sub.add_parser("open")
    o.add_argument("path")
    o.add_argument("--warm", type=int, default=20)
    args = ap.parse_args()
    if args.cmd == "incremental":
        with tmpdir("lab-bench-inc-") as tmp:
            lab_env(tmp)
            django_setup(migrate=False)
            cmd_incremental(args)
        return
    {"gen": cmd_gen, "ingest": cmd_ingest, "ingest-raw": cmd_ingest_raw, "open": cmd_open}[args.cmd](args)


if __name__ == "__main__":
    main()
