"""The real CLI end to end, for `make bench` (bench/e2e_cli.py runs this file; its name keeps it
out of `make test`, and it asserts no timing).

One run of the pinned Claude Code TUI against the scripted model, on lab's page in Chromium.
Each turn the page sends a prompt through the composer; the scripted model answers with a text
carrying the turn's token. Per turn, on one clock (the machine's wall clock: the page's
performance.timeOrigin + now() and this process's time.time()):
  - model: when the scripted model served the reply;
  - append: when the reply's line appeared in the transcript file (polled every millisecond);
  - dom: when the reply's text appeared in the page's DOM (a MutationObserver);
  - post: the reply POST's duration (lab answers once the adapter saw the text delivered),
    of which the adapter's deliberate pacing (enter_delay) is reported separately.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from compat.claude_code.scripted_model import dynamic, text, when
from providers.claude_code.provider import enter_delay
from tests.browser.conftest import LabServer, RunPage
from tests.browser.test_chat_browser import expect_state, open_run, send

pytestmark = pytest.mark.browser

TURNS = int(os.environ.get("BENCH_E2E_TURNS", "50"))

PROBE = """(prefix) => {
  window.__seen = {};
  const look = () => {
    document.querySelectorAll("#transcript .msg-assistant_text").forEach((el) => {
      const m = el.textContent.match(new RegExp(prefix + "(\\\\d+)"));
      if (m && !(m[1] in window.__seen)) window.__seen[m[1]] = performance.timeOrigin + performance.now();
    });
  };
  const root = document.getElementById("transcript").parentNode;
  new MutationObserver(look).observe(root, { childList: true, subtree: true });
}"""


class Tail(threading.Thread):
    """When each token first appears in the transcript file (polled every millisecond)."""

    def __init__(self, home: Path, prefix: str) -> None:
        super().__init__(daemon=True)
        self.home, self.prefix, self.seen, self.stop = home, prefix.encode(), {}, False
        self.offsets: dict[Path, int] = {}

    def run(self) -> None:
        while not self.stop:
            for path in (self.home / ".claude" / "projects").glob("*/*.jsonl"):
                size = path.stat().st_size
                start = self.offsets.get(path, 0)
                if size > start:
                    with open(path, "rb") as f:
                        f.seek(start)
                        chunk = f.read(size - start)
                    now = time.time()
                    end = chunk.rfind(b"\n") + 1
                    self.offsets[path] = start + end
                    for line in chunk[:end].splitlines():
                        if b'"type":"assistant"' not in line:
                            continue
                        at = line.find(self.prefix)
                        while at >= 0:
                            digits = line[at + len(self.prefix) :].split(b" ", 1)[0].rstrip(b'".,\\')
                            if digits.isdigit():
                                self.seen.setdefault(int(digits), now)
                            at = line.find(self.prefix, at + 1)
            time.sleep(0.001)


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round((len(s) - 1) * p / 100))] if s else float("nan")


def test_real_cli_reply_to_dom(page: Any, chat_run: RunPage, lab_server: LabServer) -> None:
    token = f"E2E{uuid.uuid4().hex[:6]}"
    prefix = f"{token}R"
    served: dict[int, float] = {}

    def reply(i: int) -> Any:
        def build(body: dict[str, Any]) -> Any:
            served.setdefault(i, time.time())
            return text(f"reply {prefix}{i} done")

        return dynamic(build, label=f"e2e-{i}")

    for i in range(TURNS):
        lab_server.model.script.add(when(f"{token}Q{i} ", reply(i)))
    open_run(page, chat_run)
    expect_state(page, "idle")
    page.evaluate(PROBE, prefix)
    tail = Tail(lab_server.home, prefix)
    tail.start()
    posts: list[float] = []
    try:
        for i in range(TURNS):
            prompt = f"{token}Q{i} please"
            with page.expect_response(lambda r: r.url.endswith("/reply/"), timeout=60_000) as info:
                t = time.perf_counter()
                send(page, prompt)
            info.value.finished()
            posts.append((time.perf_counter() - t) * 1000)
            page.wait_for_function(f"() => '{i}' in window.__seen", timeout=60_000)
            expect_state(page, "idle")
    finally:
        tail.stop = True
        tail.join(5)
    dom: dict[str, float] = page.evaluate("window.__seen")
    model_to_dom = [
        (dom[str(i)] / 1000 - served[i]) * 1000 for i in range(TURNS) if str(i) in dom and i in served
    ]
    append_to_dom = [
        (dom[str(i)] / 1000 - tail.seen[i]) * 1000 for i in range(TURNS) if str(i) in dom and i in tail.seen
    ]
    result = {
        "e2e": {
            "turns": TURNS,
            "model_to_dom_p50": pct(model_to_dom, 50),
            "model_to_dom_p95": pct(model_to_dom, 95),
            "append_to_dom_p50": pct(append_to_dom, 50),
            "append_to_dom_p95": pct(append_to_dom, 95),
            "append_seen": len(append_to_dom),
            "post_p50": pct(posts, 50),
            "post_p95": pct(posts, 95),
            "pacing_ms": round(
                statistics.median(enter_delay(f"{token}Q{i} please") for i in range(TURNS)) * 1000, 1
            ),
        },
        "load_avg": os.getloadavg()[0],
    }
    print("BENCH-RESULT " + json.dumps(result), flush=True)
    assert len(model_to_dom) == TURNS, (len(model_to_dom), sorted(dom), sorted(served))
