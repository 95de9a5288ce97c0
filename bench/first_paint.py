"""4. The run page of a 100,000-message transcript in Chromium: server time and first paint.

daphne (`manage.py serve`) serves a run whose transcript is the given file; headless Chromium
(Playwright) opens the page with a logged-in session. Each trial is a fresh daphne (a cold
open: the first read of the file in the process) and a fresh browser context. Reported per
trial: the server's time to the response's first byte (Navigation Timing responseStart -
requestStart), first contentful paint, and when the live socket's catch-up frame arrived.
The baseline is the same page for a run with a one-line transcript, in the same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
from pathlib import Path

from bench.common import (
    Daphne,
    django_setup,
    emit,
    kill_tmux_server,
    lab_env,
    make_live_run,
    make_operator_cookie,
    tmpdir,
)

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]

TIMING = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const fcp = performance.getEntriesByName("first-contentful-paint")[0];
  return {server: nav.responseStart - nav.requestStart, ttfb: nav.responseStart - nav.startTime,
          fcp: fcp ? fcp.startTime : null, dom: nav.domContentLoadedEventEnd - nav.startTime};
}"""


def open_page(browser, port: int, cookie: str, run_id: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    context = browser.new_context()
    try:
        name, value = cookie.split("=", 1)
        context.add_cookies([{"name": name, "value": value, "url": f"http://127.0.0.1:{port}"}])
        page = context.new_page()
        page.goto(f"http://127.0.0.1:{port}/runs/{run_id}/", wait_until="load")
        page.wait_for_function("() => performance.getEntriesByName('first-contentful-paint').length > 0")
        timing = page.evaluate(TIMING)
        assert page.locator("#transcript li.msg").count() > 0
        return timing
    finally:
        context.close()


def trial(browser, env: dict[str, str], tmp: Path, cookie: str, small_id: int, big_id: int):  # type: ignore[no-untyped-def]
    server = Daphne(env, log=tmp / "daphne.log").start()
    try:
        small = open_page(browser, server.port, cookie, small_id)
        return small, open_page(browser, server.port, cookie, big_id)
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path", help="the big transcript (bench.transcript_cost gen … --messages 100000)")
    ap.add_argument("--trials", type=int, default=5)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tmpdir("lab-bench-paint-") as tmp:
        env = lab_env(tmp)
        django_setup()
        cookie = make_operator_cookie()
        small_id, _ = make_live_run(0, tmp, sleeper=False)
        big_id, big_path = make_live_run(1, tmp, sleeper=False)
        shutil.copyfile(args.path, big_path)
        big, small = [], []
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
                try:
                    for _ in range(args.trials):
                        one, other = trial(browser, env, tmp, cookie, small_id, big_id)
                        small.append(one)
                        big.append(other)
                finally:
                    browser.close()
        finally:
            kill_tmux_server(env["LAB_TMUX_SOCKET"])

        def med(rows: list[dict[str, float]], key: str) -> float:
            return round(statistics.median(r[key] for r in rows), 1)

        emit({
            "paint": {
                "mb": round(os.path.getsize(big_path) / 2**20), "trials": args.trials,
                "server_ms": med(big, "server"), "fcp_ms": med(big, "fcp"), "dom_ms": med(big, "dom"),
                "fcp_max_ms": round(max(r["fcp"] for r in big), 1),
                "small_server_ms": med(small, "server"), "small_fcp_ms": med(small, "fcp"),
            },
            "load_avg": os.getloadavg()[0],
        })  # fmt: skip


if __name__ == "__main__":
    main()
