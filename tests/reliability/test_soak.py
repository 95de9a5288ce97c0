"""Case 14: soak. A 100 MB transcript, a writer appending 1,000 lines/s, a browser socket
watching: every appended message arrives exactly once and in order, and RSS stays flat.

The default run is short (LAB_SOAK_SECONDS=20); the full case is LAB_SOAK_SECONDS=300.
LAB_SOAK_REPORT=path.json writes the RSS curve (one sample a second)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time

import pytest
from asgiref.sync import sync_to_async

from runs import services
from runs.transcripts import _indexes
from tests.security.support import MSG_RE, frames_until, session_cookie, ws_open

SECONDS = float(os.environ.get("LAB_SOAK_SECONDS", "20"))
RATE = int(os.environ.get("LAB_SOAK_RATE", "1000"))  # lines a second
SIZE_MB = int(os.environ.get("LAB_SOAK_MB", "100"))
REPORT = os.environ.get("LAB_SOAK_REPORT", "")
# Allowed RSS growth after warm-up: the index keeps a bounded tail and a checkpoint per 256
# messages (a few hundred bytes each), so 5 minutes at 1,000/s may add a few MB, not more.
MAX_GROWTH_MB = float(os.environ.get("LAB_SOAK_MAX_GROWTH_MB", "40"))


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _prefill(path: str, size_mb: int) -> int:
    """The existing 100 MB: ~1 KB lines. Returns how many messages it holds."""
    pad = "p" * 1000
    line = (json.dumps({"kind": "assistant_text", "text": pad}) + "\n").encode()
    count = size_mb * 1024 * 1024 // len(line)
    block = line * 1024
    with open(path, "wb") as f:
        for _ in range(count // 1024):
            f.write(block)
        f.write(line * (count % 1024))
    return count


class Writer(threading.Thread):
    def __init__(self, path: str, rate: int, seconds: float) -> None:
        super().__init__(daemon=True)
        self.path, self.rate, self.seconds = path, rate, seconds
        self.written = 0

    def run(self) -> None:
        tick = 0.01
        per_tick = max(1, int(self.rate * tick))
        start = time.monotonic()
        with open(self.path, "ab", buffering=0) as f:
            while time.monotonic() - start < self.seconds:
                lines = b"".join(
                    (json.dumps({"kind": "assistant_text", "text": f"s{self.written + i}"}) + "\n").encode()
                    for i in range(per_tick)
                )
                f.write(lines)
                self.written += per_tick
                # Pace against the clock, not the sleep: the rate holds under load.
                delay = start + (self.written / self.rate) - time.monotonic()
                if delay > 0:
                    time.sleep(delay)


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/soak")


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(max(300, SECONDS * 3 + 120))
async def test_a_watched_100_mb_transcript_under_1000_lines_a_second_loses_nothing_and_rss_stays_flat(
    run, operator
):
    _indexes.clear()
    base = await sync_to_async(_prefill)(run.transcript_path, SIZE_MB)
    cookie = await sync_to_async(session_cookie)(operator)
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    frames = await frames_until(ws, lambda f: f'data-seq="{base - 1}"' in f, timeout=120)
    assert "msg-" in "".join(frames)

    writer = Writer(run.transcript_path, RATE, SECONDS)
    samples: list[tuple[float, float]] = []
    replaced = 0
    start = time.monotonic()
    writer.start()

    async def sample() -> None:
        while writer.is_alive():
            samples.append((round(time.monotonic() - start, 1), round(rss_mb(), 1)))
            await asyncio.sleep(1)

    sampler = asyncio.create_task(sample())
    # Verified as it streams, holding O(1) per message: the test's own memory must stay flat too.
    nxt = base  # the next seq the page should get
    gaps: list[tuple[int, int]] = []  # [a, b): skipped by a re-render, loadable by scrolling up
    quiet_since = time.monotonic()
    while writer.is_alive() or nxt < base + writer.written:
        if await ws.receive_nothing(timeout=0.05, interval=0.01):
            assert time.monotonic() - quiet_since < 30, (
                f"no frame for 30 s at seq {nxt} of {base + writer.written}"
            )
            continue
        quiet_since = time.monotonic()
        frame = await ws.receive_from(timeout=10)
        window = [int(s) for _e, s in MSG_RE.findall(frame) if int(s) >= base]
        if 'id="transcript"' in frame and window:
            # Fell more than MAX_REPLAY behind: the list is re-rendered from its last page, with
            # an "earlier" loader for what lies between (live/frames.catch_up_html).
            replaced += 1
            fresh = [s for s in window if s >= nxt]
            if fresh and fresh[0] > nxt:
                gaps.append((nxt, fresh[0]))
            window, nxt = fresh, fresh[0] if fresh else nxt
        for seq in window:
            assert seq == nxt, f"expected seq {nxt}, got {seq} ({'a duplicate' if seq < nxt else 'a gap'})"
            nxt += 1
    await sampler
    await ws.disconnect()

    filled = await sync_to_async(_load_earlier)(run, operator, gaps)
    assert nxt == base + writer.written
    assert filled == [s for a, b in gaps for s in range(a, b)]  # every skipped one loads, once
    warm = [rss for t, rss in samples if t >= min(5.0, SECONDS / 4)]
    growth = max(warm) - warm[0]
    summary = {
        "seconds": SECONDS,
        "rate": RATE,
        "prefill_mb": SIZE_MB,
        "prefill_messages": base,
        "appended": writer.written,
        "achieved_rate": round(writer.written / SECONDS),
        "rss_start_mb": samples[0][1],
        "rss_after_warmup_mb": warm[0],
        "rss_max_mb": max(r for _t, r in samples),
        "rss_end_mb": samples[-1][1],
        "growth_after_warmup_mb": round(growth, 1),
        "rerenders": replaced,
        "messages_behind_a_rerender": len(filled),
        "curve": samples,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "curve"}))
    if REPORT:
        with open(REPORT, "w") as f:
            json.dump(summary, f, indent=1)
    assert writer.written >= RATE * SECONDS * 0.8, "the writer could not hold the rate"
    assert growth < MAX_GROWTH_MB, f"RSS grew {growth:.1f} MB after warm-up: {samples}"


def _load_earlier(run, operator, gaps: list[tuple[int, int]]) -> list[int]:
    """What a tab scrolling up fetches: /runs/<id>/messages/?before=<seq>, page by page."""
    from django.test import Client

    client = Client()
    client.force_login(operator)
    out: list[int] = []
    for start, stop in gaps:
        before = stop
        while before > start:
            body = client.get(f"/runs/{run.pk}/messages/", {"before": before}).content.decode()
            page = [int(s) for _e, s in MSG_RE.findall(body)]
            assert page and page[-1] == before - 1, (before, page[-3:])
            out.extend(s for s in page if s >= start)
            before = page[0]
    return sorted(out)


def _first_difference(a: list[int], b: list[int]) -> tuple[int, int | None, int | None] | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i, x, y
    return None if len(a) == len(b) else (min(len(a), len(b)), None, None)
