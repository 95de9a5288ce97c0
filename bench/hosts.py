# ruff: noqa: E501  (the page-side script reads better unwrapped)
"""10. Several machines: the same web tier (daphne, Chromium on its pages), one run on its own
host and one on host b, whose runner is in another network namespace and reached through
Redis (tests/deploy/). Side by side, alternating turn by turn:

- reply → DOM: the operator presses Enter; the real Claude Code on the run's host answers
  (scripted model) and the answer appears in the page;
- transcript line → DOM: a line appended to the run's transcript on its host, until the page
  shows it (lab's own path: watcher, render, socket; plus the relay for host b).
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import emit, pct, tmpdir

OBSERVER = """
() => {
  window.__seen = {}; window.__sent = {};
  const t = document.getElementById("transcript");
  new MutationObserver(() => {
    const text = t.innerText;
    for (const key of window.__want || []) {
      if (!(key in window.__seen) && text.includes(key)) window.__seen[key] = performance.timeOrigin + performance.now();
    }
  }).observe(t, {subtree: true, childList: true, characterData: true});
  // On the document: the composer is swapped after each reply, and its listeners with it.
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && e.target.matches("#composer textarea")) window.__sent[e.target.value] = performance.timeOrigin + performance.now();
  }, true);
}
"""


def seen(page: Any, key: str, timeout_s: float = 60) -> float:
    page.evaluate("(k) => { (window.__want = window.__want || []).push(k); }", key)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        at = page.evaluate(
            "(k) => window.__seen[k] || (document.getElementById('transcript').innerText.includes(k) ? -1 : 0)",
            key,
        )
        if at:
            return float(at)
        page.wait_for_timeout(20)
    raise TimeoutError(f"{key!r} never reached the page")


def reply_turn(page: Any, key: str) -> float:
    box = page.locator("#composer textarea")
    box.fill(key)
    box.press("Enter")
    at = seen(page, f"You said: {key}")
    sent = page.evaluate("(k) => window.__sent[k]", key)
    page.wait_for_selector("#panel[data-state=idle]")
    return at - float(sent)


def append_turn(page: Any, transcript: Path, key: str) -> float:
    """A copy of the transcript's last assistant line with new ids and `key` as its text."""
    lines = [json.loads(x) for x in transcript.read_text().splitlines() if x.strip()]
    last = next(x for x in reversed(lines) if x.get("type") == "assistant")
    line = copy.deepcopy(last)
    line["parentUuid"], line["uuid"] = lines[-1].get("uuid"), str(uuid.uuid4())
    line["message"]["id"] = f"msg_bench_{uuid.uuid4().hex}"
    line["message"]["content"] = [{"type": "text", "text": key}]
    page.evaluate("(k) => { (window.__want = window.__want || []).push(k); }", key)
    at = time.time() * 1000
    with transcript.open("a") as f:
        f.write(json.dumps(line) + "\n")
    return seen(page, key) - at


def transcript_path(home: Path) -> Path:
    files = sorted((home / ".claude" / "projects").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    return files[-1]


def main() -> None:
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
    from tests.deploy.lab import OPERATOR, Deployment
    from tests.deploy.netns import NetnsBed

    turns = int(os.environ.get("BENCH_HOSTS_TURNS", "10"))
    with tmpdir("lab-bench-hosts-") as tmp, NetnsBed(("b",), logs_dir=tmp / "bed") as bed:
        lab = Deployment(bed, tmp, web_host="web").start()
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                ctx = browser.new_context(base_url=lab.origin)
                ctx.set_default_timeout(90_000)
                page = ctx.new_page()
                page.goto("/")
                page.get_by_label("Username").fill(OPERATOR)
                page.get_by_label("Password").fill(lab.password)
                page.get_by_role("button", name="Log in").click()
                page.wait_for_selector("h1:has-text('Runs')")
                pages, homes = {}, {"single": lab.web_agent.agent_home, "cross": lab.hosts["b"].agent_home}  # type: ignore[union-attr]
                for which, prefix, repo in (
                    ("single", "", lab.web_agent.repo),  # type: ignore[union-attr]
                    ("cross", "/hosts/b", lab.hosts["b"].repo),
                ):
                    p = ctx.new_page()
                    p.goto(f"{prefix}/runs/new/")
                    if not p.get_by_label("Repository").count():
                        raise RuntimeError(f"{prefix}/runs/new/: {p.inner_text('body')[:600]}")
                    p.get_by_label("Repository").fill(str(repo))
                    p.get_by_label("Branch").fill(f"lab/bench-{which}")
                    p.get_by_role("button", name="Start").click()
                    p.wait_for_url("**/runs/*/")
                    p.wait_for_selector("#panel[data-state=idle]")
                    p.evaluate(OBSERVER)
                    reply_turn(p, f"BENCH-WARM-{which}")
                    pages[which] = p
                out: dict[str, list[float]] = {f"{w}_{k}": [] for w in pages for k in ("reply", "append")}
                for i in range(turns):
                    for which, p in pages.items():
                        out[f"{which}_reply"].append(reply_turn(p, f"BENCH-R{i}-{which}"))
                        path = transcript_path(homes[which])
                        out[f"{which}_append"].append(append_turn(p, path, f"BENCH-A{i}-{which}"))
                browser.close()
        finally:
            if lab.web is not None:
                bed.kill(lab.web)
    result: dict[str, object] = {"turns": turns, "load_avg": os.getloadavg()[0]}
    for key, values in out.items():
        result[f"{key}_p50"] = statistics.median(values)
        result[f"{key}_p95"] = pct(values, 95)
    emit({"hosts": result})


if __name__ == "__main__":
    main()
