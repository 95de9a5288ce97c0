# ruff: noqa: E501  (benchmark tables and fixture-shaped literals read better unwrapped)
"""`make bench`: every benchmark in its own process, one table (also written to bench/results.md).

  python -m bench            the full sizes (100 MB, 100,000 messages, 500 appends)
  python -m bench --quick    smaller sizes, for a quick look
  python -m bench --only latency,reply,approval

Each row: the target, the measured value, and the naive baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.common import PY, ROOT, tmpdir

RESULTS = ROOT / "bench" / "results.md"
ALL = (
    "latency",
    "append",
    "scale200",
    "inotify",
    "incremental",
    "ingest",
    "open",
    "paint",
    "reply",
    "approval",
    "e2e",
    "scaleout",
    "terminal",
    "list",
    "unwatched",
    "hosts",
    "memory",
)


def run(module: str, *args: str, env: dict[str, str] | None = None) -> list[dict]:
    t = time.monotonic()
    proc = subprocess.run(
        [PY, "-m", module, *args], cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    out = [json.loads(line[13:]) for line in proc.stdout.splitlines() if line.startswith("BENCH-RESULT ")]
    print(f"  {module} {' '.join(args)}: {time.monotonic() - t:.1f} s", file=sys.stderr, flush=True)
    if proc.returncode != 0 or not out:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-5000:])
        raise SystemExit(f"{module} failed")
    return out


def callgrind_per_append(appends: int, *extra: str) -> float | None:
    """bench.append_cost under callgrind, instrumentation on only for the measured appends:
    instructions per append, or None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    with tmpdir("lab-bench-callgrind-") as tmp:
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={tmp}/out",
             PY, "-m", "bench.append_cost", "--appends", str(appends), *extra],
            cwd=ROOT, env={**os.environ, "BENCH_CALLGRIND": "1"}, capture_output=True, text=True,
        )  # fmt: skip
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-3000:])
        raise SystemExit("bench.append_cost under callgrind failed")
    return int(found.group(1)) / appends


def f(v: float | None, unit: str = "ms", nd: int = 1) -> str:
    return "n/a" if v is None else f"{v:.{nd}f} {unit}".strip()


def ok(good: bool) -> str:
    return "yes" if good else "**MISS**"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=",".join(ALL))
    args = ap.parse_args()
    only = set(args.only.split(","))
    q = args.quick
    big_mb, open_msgs, appends = (20, 20_000, 200) if q else (100, 100_000, 500)
    rows: list[tuple[str, str, str, str, str]] = []  # figure, target, measured, baseline, met
    notes: list[str] = []
    t0 = time.monotonic()
    load0 = os.getloadavg()[0]

    if "latency" in only:
        # The naive poller runs right after lab, alone, on fresh files with the same writer (on 2
        # cores, run together, each steals the other's CPU); the last row runs them together.
        one = run("bench.latency", "--runs", "1", "--appends", str(appends), "--rate", "20")[0]
        many_args = ["--runs", "50", "--appends", "12" if q else "40", "--rate", "10"]
        many = run("bench.latency", *many_args)[0]
        together = run("bench.latency", *many_args, "--baseline", "concurrent")[0]
        busy = run("bench.latency", *many_args, "--burn", "1")[0]
        for res, target, label in (
            (one, 50, "1 live run, 20 appends/s"),
            (many, 150, "50 live runs × 10 lines/s"),
            (together, 150, "50 live runs × 10 lines/s, the poller running at the same time"),
            (busy, 150, "50 live runs × 10 lines/s, a CPU-bound process taking one of the 2 cores"),
        ):
            when = "at the same time" if res["baseline_mode"] == "concurrent" else "alone, right after"
            rows.append((
                f"1. append → browser p50 / p95 / p99 ({label}, {res['appends']} appends)",
                f"p95 ≤ {target} ms",
                f"{f(res['p50'])} / {f(res['p95'])} / {f(res['p99'])}",
                f"poll 500 ms + re-read ({when}): {f(res['base_p50'])} / {f(res['base_p95'])} / {f(res['base_p99'])}"
                + (f" (baseline {res['base_p95'] / res['p95']:.1f}× slower p95)" if res["base_p95"] >= res["p95"]
                 else f" (lab {res['p95'] / res['base_p95']:.1f}× SLOWER p95 than the baseline)"),
                ok(res["p95"] <= target),
            ))  # fmt: skip
            rows.append((
                f"1. lost / duplicated messages ({label})", "0 / 0",
                f"{res['lost']} / {res['duplicated']} (seq gaps {res['seq_gaps']}, dup seqs {res['dup_seq']})",
                f"poller saw {res['base_seen']}/{res['appends']}", ok(res["lost"] == 0 and res["duplicated"] == 0),
            ))  # fmt: skip
            if res is many:
                rows.append((
                    "1. daphne CPU per appended line (50 live runs × 10 lines/s, every run watched)",
                    "≤ 0.25 ms",
                    f"{res['server_cpu_ms_per_append']:.2f} ms ({res['server_cpu_pct']}% of a core; load average {res['load_avg_during']:.1f})",
                    "before this round: 0.89 ms (same bench, tree f2773e5, load average 4.5); before the digest window and the index pins: 0.46–0.50 ms (tree 1f55c30, alternated with this tree's 0.44–0.46 ms, load average 1.2–1.7; not this run)",
                    ok(res["server_cpu_ms_per_append"] <= 0.25),
                ))  # fmt: skip
            notes.append(
                f"latency {label}: daphne CPU {res['server_cpu_pct']}% ({res['server_cpu_ms_per_append']} ms"
                f" per append), websocket client {res['client_cpu_pct']}%, writer + poller"
                f" {res['writer_poller_cpu_pct']}%, load average {res['load_avg_during']:.1f} when it ended,"
                f" {res['panel_frames']} panel frames"
            )

    if "scale200" in only:
        # 200 live runs × 10 lines/s with a CPU-bound process taking one of the 2 cores; then
        # the same runs with 1 MB transcripts, for memory per run against transcript size.
        big_args = ["--runs", "200", "--appends", "10" if q else "30", "--rate", "10", "--baseline", "none"]
        s200 = run("bench.latency", *big_args, "--burn", "1")[0]
        # The index keeps a bounded tail of messages, so memory grows until that tail is full and
        # then no more: compare two transcript sizes that both fill it (0.5 MB, about 80
        # messages, did not: that row compared a tail filling).
        s200a = run("bench.latency", *big_args, "--prefill-mb", "1.5")[0]
        s200b = run("bench.latency", *big_args, "--prefill-mb", "6")[0]
        rows.append((
            f"1. append → browser p50 / p95 / p99 (200 live runs × 10 lines/s, a CPU-bound process on one of the 2 cores, {s200['appends']} appends)",
            "p95 ≤ 50 ms", f"{f(s200['p50'])} / {f(s200['p95'])} / {f(s200['p99'])}",
            f"daphne {s200['server_cpu_pct']}% of a core, {s200['server_cpu_ms_per_append']} ms CPU per append; load average {s200['load_avg_during']:.1f}"
            f" (after one warm-up append per run, all seen in {s200['warm_s']:.2f} s); before the index pins: 0.45 ms per append, 68% of a core (load average 2.7; not this run)",
            ok(s200["p95"] <= 50),
        ))  # fmt: skip
        rows.append((
            "1. lost / duplicated messages (200 live runs, CPU-bound process beside)", "0 / 0",
            f"{s200['lost']} / {s200['duplicated']} (seq gaps {s200['seq_gaps']}, dup seqs {s200['dup_seq']})", "—",
            ok(s200["lost"] == 0 and s200["duplicated"] == 0),
        ))  # fmt: skip
        rows.append((
            "1. memory per live run (watcher + index + socket + caches), 200 runs: daphne RSS growth / run",
            "6 MB ≤ 1.25 × 1.5 MB",
            f"{s200a['rss_per_run_kb']:.0f} KB with 1.5 MB transcripts, {s200b['rss_per_run_kb']:.0f} KB with 6 MB ones"
            f" (RSS {s200a['server_rss_before_mb']:.0f} → {s200a['server_rss_after_mb']:.0f} MB / {s200b['server_rss_before_mb']:.0f} → {s200b['server_rss_after_mb']:.0f} MB)",
            f"1-line transcripts (tail nearly empty): {s200['rss_per_run_kb']:.0f} KB",
            ok(s200b["rss_per_run_kb"] <= 1.25 * s200a["rss_per_run_kb"]),
        ))  # fmt: skip
    if "append" in only:
        ac = run("bench.append_cost", "--appends", "300" if q else "1000")[0]
        rows.append((
            "1. lab's own CPU per appended line, unbatched (one run, one socket, in-process: watcher + layer + consumer, no daphne)",
            "(the part of ≤ 0.25 ms that is lab's)", f"{ac['append_cost']['cpu_ms_per_append']:.3f} ms (load average {ac['load_avg']:.1f})",
            "instructions: the next row (callgrind)", "—",
        ))  # fmt: skip
        instructions = callgrind_per_append(100)
        rows.append((
            "1. … the same path in instructions per append (callgrind, 100 measured appends): the stable figure",
            "(decides between trees)",
            f"{instructions / 1e6:.2f} M" if instructions else "n/a (valgrind not installed)",
            "before round three: 4.27–4.30 M; compiled fragments 3.68–3.79 M; intents path once 3.48–3.51 M; digest window 3.48 M",
            "—",
        ))  # fmt: skip
        # A long run's reader carries full windows (256 dedupe keys, 64 tool names): the cost a
        # read pays to carry them shows only once they are full.
        instructions = callgrind_per_append(100, "--prefill-mb", "2")
        rows.append((
            "1. … the same, on a 2 MB transcript (the reader's dedupe window and tool names full)",
            "(decides between trees)",
            f"{instructions / 1e6:.2f} M" if instructions else "n/a (valgrind not installed)",
            "before the digest window (tree 1f55c30, same session): 3.65 M",
            "—",
        ))  # fmt: skip
    if "inotify" in only:
        ino = run("bench.inotify_cost", "--appends", "2000" if q else "6000")[0]
        rows.append((
            "1. inotify read on the loop, CPU per append (200 dirs, 2000 appends/s): live/inotify.py vs asyncinotify",
            "keep the cheaper", f"{ino['inotify']['lab']:.3f} ms", f"asyncinotify 4.4.4: {ino['inotify']['asyncinotify']:.3f} ms (load average {ino['load_avg']:.1f})",
            ok(ino["inotify"]["lab"] <= ino["inotify"]["asyncinotify"]),
        ))  # fmt: skip
    with tmpdir("lab-bench-files-") as tmp:
        small, big, dense = tmp / "small.jsonl", tmp / "big.jsonl", tmp / "dense.jsonl"
        if only & {"incremental", "ingest"}:
            run("bench.transcript_cost", "gen", str(small), "--bytes", str(2**20))
            gen = run("bench.transcript_cost", "gen", str(big), "--bytes", str(big_mb * 2**20))[0]
            notes.append(
                f"synthetic transcript: {gen['bytes'] / 2**20:.0f} MB, {gen['turns']} turns, realistic mix "
                "(per turn: mode/permission-mode/file-history-snapshot/attachments, api-request-shape ≈ 30 KB, "
                "prompt-snapshot attachment ≈ 50 KB, 6 tool calls)"
            )
        if "incremental" in only:
            inc = run("bench.transcript_cost", "incremental", str(small), str(big))[0]["incremental"]
            rows.append((
                f"2. one appended line: TranscriptIndex.advance p50, {inc['big']['mb']:.0f} MB vs {inc['small']['mb']:.0f} MB",
                "ratio ≤ 1.5",
                f"{f(inc['big']['p50_ms'], nd=3)} vs {f(inc['small']['p50_ms'], nd=3)} → ratio {inc['ratio']:.2f}",
                f"re-parse whole file: {f(inc['big']['base_p50_ms'])} vs {f(inc['small']['base_p50_ms'])}"
                f" → ratio {inc['base_ratio']:.1f}",
                ok(inc["ratio"] <= 1.5),
            ))  # fmt: skip
        if "ingest" in only:
            lab = run("bench.transcript_cost", "ingest", str(big))[0]
            raw = run("bench.transcript_cost", "ingest-raw", str(big))[0]
            # The budget Claude Code's adapter reads with (providers/claude_code/provider.READ_BUDGET).
            lab4 = run("bench.transcript_cost", "ingest", str(big), "--max-bytes", str(512 * 1024))[0]
            rows.append((
                f"3. full read of {lab['mb']:.0f} MB through read_transcript vs raw orjson line loop",
                "≥ 0.5× raw",
                f"{lab['mb_s']:.0f} MB/s ({lab['s']:.2f} s) = {lab['mb_s'] / raw['mb_s']:.2f}× raw; "
                f"peak RSS {lab['peak_rss_mb']:.0f} MB",
                f"raw: {raw['mb_s']:.0f} MB/s, peak RSS {raw['peak_rss_mb']:.0f} MB",
                ok(lab["mb_s"] / raw["mb_s"] >= 0.5),
            ))  # fmt: skip
            rows.append((
                "3. same read in passes of the adapter's 512 KiB budget (max_bytes)",
                "bounded memory", f"{lab4['mb_s']:.0f} MB/s; peak RSS {lab4['peak_rss_mb']:.0f} MB",
                f"default 64 MB budget: peak RSS {lab['peak_rss_mb']:.0f} MB", "—",
            ))  # fmt: skip
        if only & {"open", "paint"}:
            gen = run("bench.transcript_cost", "gen", str(dense), "--messages", str(open_msgs),
                      "--bookkeeping-every", "20")[0]  # fmt: skip
            if "paint" in only:
                pt = run("bench.first_paint", str(dense), "--trials", "3" if q else "5")[0]["paint"]
                rows.append((
                    f"4. the run page in Chromium (Playwright), {pt['mb']} MB / 100,000-message run, cold file in a warm daphne: server time / first contentful paint, median of {pt['trials']}",
                    "paint ≤ 300 ms", f"{f(pt['server_ms'])} / {f(pt['fcp_ms'])} (max {f(pt['fcp_max_ms'])})",
                    f"one-line transcript, first page of the process: {f(pt['small_server_ms'])} / {f(pt['small_fcp_ms'])}",
                    ok(pt["fcp_ms"] <= 300),
                ))  # fmt: skip
            if "open" in only:
                op = run("bench.transcript_cost", "open", str(dense))[0]
                rows.append((
                    f"4. GET /runs/<id>/ cold (first open in the process), {op['messages']:,} messages, {op['mb']:.0f} MB",
                    "≤ 50 ms", f"{f(op['cold_ms'])}", f"re-parse per open: {f(op['base_ms'])}", ok(op["cold_ms"] <= 50),
                ))  # fmt: skip
                rows.append((
                    "4. … meanwhile the whole file is indexed in the background: full index in place after / peak RSS growth",
                    "(no target)",
                    f"{f(op['full_index_ready_s'], 's', 2)} / {op['peak_growth_with_full_index_mb']:.0f} MB"
                    f" (the first response numbered {op['cold_messages_indexed']:,} messages from the end;"
                    " its page re-renders in the full numbering)",
                    "—", "—",
                ))  # fmt: skip
                rows.append((
                    "4. GET /runs/<id>/ warm (index built; only appended bytes parsed) p50 / p95",
                    "≤ 200 ms", f"{f(op['warm_p50_ms'])} / {f(op['warm_p95_ms'])}",
                    f"re-parse per open: {f(op['base_ms'])} ({op['base_ms'] / op['warm_p50_ms']:.0f}× slower)",
                    ok(op["warm_p95_ms"] <= 200),
                ))  # fmt: skip
                rows.append((
                    "4. memory of the cold open: peak RSS growth / RSS retained after / live blocks retained",
                    "not ∝ file",
                    f"{op['peak_growth_mb']:.0f} MB / {op['rss_retained_mb']:.0f} MB / {op['live_blocks_retained']:,}"
                    f" (file {op['mb']:.0f} MB, index checkpoints {op['checkpoints']})",
                    "re-parse holds every message", ok(op["peak_growth_mb"] < op["mb"] / 4),
                ))  # fmt: skip
    if "reply" in only:
        rep = run("bench.reply", env={"BENCH_REPLY_TRIALS": "10" if q else "20"})[0]["reply"]
        for _label, r in rep.items():
            rows.append((
                f"5. reply → text in the pane's program, {r['chars']} chars: paste p50 / p95",
                "(no target)", f"{f(r['paste_p50'])} / {f(r['paste_p95'])}",
                f"send-keys -l (unsafe, no bracketed paste): {f(r['naive_p50'])} / {f(r['naive_p95'])}", "—",
            ))  # fmt: skip
            rows.append((
                f"5. … then Enter p50 / p95 (after the adapter's deliberate pacing of {r['pacing_ms']:.0f} ms, excluded)",
                "(no target)", f"{f(r['enter_p50'])} / {f(r['enter_p95'])}",
                f"proposed one-process paste: {f(r['one_call_p50'])} / {f(r['one_call_p95'])}", "—",
            ))  # fmt: skip
    if "approval" in only:
        ap_ = run("bench.approval", env={"BENCH_APPROVAL_TRIALS": "10" if q else "20"})[0]["approval"]
        rows.append((
            f"7. tool-permission hook → browser (needs_input + the approval dialog), {ap_['trials']} trials, p50 / p95 / max",
            "≤ 1 s", f"{f(ap_['p50'])} / {f(ap_['p95'])} / {f(ap_['max'])}",
            f"before: needs_input only on the Notification, which the CLI sends ~{ap_['cli_notification_delay_s']:.0f} s after the prompt, "
            f"+ {f(ap_['notification_p50'])} / {f(ap_['notification_p95'])} to the page; no dialog",
            ok(ap_["within_1s"] == ap_["trials"]),
        ))  # fmt: skip
    if "e2e" in only:
        e2e = run("bench.e2e_cli", env={"BENCH_E2E_TURNS": "20" if q else "50"})[0]
        e = e2e["e2e"]
        rows.append((
            f"8. the real Claude Code TUI writes the reply (scripted model) → text in Chromium's DOM, {e['turns']} turns, p50 / p95",
            "(no target)", f"{f(e['model_to_dom_p50'])} / {f(e['model_to_dom_p95'])}",
            f"of which transcript append → DOM: {f(e['append_to_dom_p50'])} / {f(e['append_to_dom_p95'])} ({e['append_seen']} appends seen); load average {e2e['load_avg']:.1f}",
            "—",
        ))  # fmt: skip
        rows.append((
            "8. reply POST → delivery receipt (lab's answer once the adapter saw the text delivered) p50 / p95",
            "(no target)", f"{f(e['post_p50'])} / {f(e['post_p95'])}",
            f"of which the adapter's deliberate pacing before Enter: {f(e['pacing_ms'])}", "—",
        ))  # fmt: skip
    if "scaleout" in only:
        so = run("bench.scaleout", env={"BENCH_SCALE_APPENDS": "150" if q else "300"})[0]["scaleout"]
        st, tk = so["steady"], so["takeover"]
        rows.append((
            f"6. two workers, PostgreSQL + Redis: socket on B, watcher on A ({st['appends']} appends) p50 / p95 / p99",
            "(no target)", f"{f(st['p50'])} / {f(st['p95'])} / {f(st['p99'])}; lost {st['lost']}, dup {st['duplicated']}",
            "—", ok(st["lost"] == 0 and st["duplicated"] == 0),
        ))  # fmt: skip
        rows.append((
            "6. watch leases held (pg advisory locks for the run) before / after killing A",
            "exactly 1", f"{so['leases_before']['advisory_locks']} / {so['leases_after']['advisory_locks']}", "—",
            ok(so["leases_before"]["advisory_locks"] == 1 and so["leases_after"]["advisory_locks"] == 1),
        ))  # fmt: skip
        lt = so.get("lease_takeover_s")
        rows.append((
            "6. SIGKILL the watching worker: lease taken over by B after / appends lost after",
            "≤ 5 s, 0 lost", f"{f(lt, 's', 2)} / {tk['lost']} lost, {tk['duplicated']} dup of {tk['appends']}",
            "—", ok(lt is not None and lt <= 5 and tk["lost"] == 0),
        ))  # fmt: skip

    if "terminal" in only:
        # The Terminal view: a pane redrawing 200x50 at 20 fps, read three ways, then streamed.
        tm = run("bench.terminal_stream", "--seconds", "3" if q else "8", "--appends", "15" if q else "40")[0]
        for way, label in (
            ("control", "tmux control mode (lab)"),
            ("pipe", "pipe-pane into a FIFO"),
            ("poll", "capture-pane polled at 10 Hz"),
        ):
            rows.append((
                f"7. reading a busy pane (200x50 at 20 fps): {label}, CPU of tmux + reader",
                "(no target: the cheapest that keeps every byte in order)",
                f"{tm[f'{way}_tmux_cpu_pct'] + tm[f'{way}_reader_cpu_pct']:.1f}% of a core, {tm[f'{way}_kb_per_s']} KB/s read",
                f"pane unread: tmux {tm['none_tmux_cpu_pct']}%", "—",
            ))  # fmt: skip
        rows.append((
            "7. daphne CPU streaming the busy pane to 0 / 1 / 5 Terminal sockets",
            "(no target)",
            f"{tm['daphne_cpu_pct_0_viewers']}% / {tm['daphne_cpu_pct_1_viewers']}% / {tm['daphne_cpu_pct_5_viewers']}% of a core",
            f"{tm['kb_per_s_each_5_viewers']} KB/s to each of 5", "—",
        ))  # fmt: skip
        p0, p5 = tm["chat_p95_ms_0_viewers"], tm["chat_p95_ms_5_viewers"]
        rows.append((
            "7. 50 other runs' chats (10 lines/s) p50 / p95 while 5 sockets stream the busy pane",
            "p95 ≤ 150 ms, 0 lost",
            f"{f(tm['chat_p50_ms_5_viewers'])} / {f(p5)}, {tm['chat_lost_5_viewers']} lost",
            f"no Terminal socket: {f(tm['chat_p50_ms_0_viewers'])} / {f(p0)} ({p5 / p0:.2f}× the p95)",
            ok(p5 <= 150 and tm["chat_lost_5_viewers"] == 0),
        ))  # fmt: skip

    if "list" in only:
        rl = run("bench.runs_list")[0]["runs_list"]
        rows.append((
            f"8. one run's state change, per open runs list ({rl['runs']} runs, {rl['live']} live): the page asks the list's view for the changed row",
            "O(one row)",
            f"{f(rl['row_ms'])}, {rl['row_bytes']} B",
            f"the whole list asked again: {f(rl['whole_ms'])}, {rl['whole_bytes'] / 1024:.0f} KB",
            ok(rl["row_ms"] * 5 < rl["whole_ms"]),
        ))  # fmt: skip

    if "unwatched" in only:
        uw = run("bench.unwatched")[0]
        u = uw["unwatched"]
        rows.append((
            f"9. a run nobody watches: {u['runs']} live runs, a turn of 11 lines each, 0 sockets on them: panels and messages rendered",
            "0",
            f"{u['rendered']} ({u['cpu_ms_per_append']:.3f} ms CPU per line, load average {uw['load_avg']:.1f})",
            "before: one panel per run per state change (200 here)",
            ok(u["rendered"] == 0),
        ))  # fmt: skip

    if "hosts" in only:
        ho = run("bench.hosts", env={"BENCH_HOSTS_TURNS": "5" if q else "15"})[0]["hosts"]
        rows.append((
            f"10. several machines: reply → DOM (real Claude Code) on host b behind a runner in another network namespace, {ho['turns']} turns, p50 / p95",
            "(no target: the relay's cost beside one host)",
            f"{f(ho['cross_reply_p50'])} / {f(ho['cross_reply_p95'])} ({ho['cross_reply_p50'] / ho['single_reply_p50']:.2f}× one host's p50)",
            f"the same web tier's own run: {f(ho['single_reply_p50'])} / {f(ho['single_reply_p95'])}",
            "—",
        ))  # fmt: skip
        rows.append((
            "10. several machines: a transcript line on host b → DOM through the relay, p50 / p95",
            "(no target)",
            f"{f(ho['cross_append_p50'])} / {f(ho['cross_append_p95'])}",
            f"the same web tier's own run: {f(ho['single_append_p50'])} / {f(ho['single_append_p95'])}; load average {ho['load_avg']:.1f}",
            "—",
        ))  # fmt: skip
    if "memory" in only:
        # What a run's index keeps, by tracemalloc (independent of the allocator and of load),
        # at the latency bench's density and at a dense one (more messages, so more checkpoints).
        for dense, runs_n, before in (
            (False, "200", "before round three's window change: 48 / 126 / 199 KB"),
            (True, "50", "before round three's window change: 127 / 228 / 488 KB"),
        ):
            mem = run("bench.index_memory", "--runs", runs_n, *(["--dense"] if dense else []))[0]
            m = mem["index_memory"]
            half, two, six = m["0.5"], m["2"], m["6"]
            rows.append((
                f"1. memory per run's transcript index (tracemalloc, {mem['runs']} runs{', dense transcripts' if dense else ''}): 0.5 / 2 / 6 MB"
                f" ({half['messages']} / {two['messages']} / {six['messages']} messages, {half['checkpoints']} / {two['checkpoints']} / {six['checkpoints']} checkpoints)",
                "6 MB ≤ 1.25 × 2 MB (both fill the tail)",
                f"{half['kb_per_run']:.0f} / {two['kb_per_run']:.0f} / {six['kb_per_run']:.0f} KB",
                before,
                ok(six["kb_per_run"] <= 1.25 * two["kb_per_run"]),
            ))  # fmt: skip

    total = time.monotonic() - t0
    head = "| figure | target | measured | naive baseline (same run) | met |\n|---|---|---|---|---|\n"
    table = head + "".join(f"| {a} | {b} | {c} | {d} | {e} |\n" for a, b, c, d, e in rows)
    meta = (
        f"`make bench{' ARGS=--quick' if q else ''}` on {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, total {total:.0f} s, "
        f"load average {load0:.1f} → {os.getloadavg()[0]:.1f} (other work on the machine adds noise)."
    )
    text = f"{table}\n{meta}\n\n" + "".join(f"- {n}\n" for n in notes)
    print("\n" + text)
    if set(args.only.split(",")) == set(ALL):
        Path(RESULTS).write_text("# lab benchmarks (latest run)\n\n" + text)


if __name__ == "__main__":
    main()
