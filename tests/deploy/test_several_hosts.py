"""lab on several machines, deployed for real on one: two runner hosts (a, b) in their own
network namespaces with their own tmux servers, agent homes, repositories and scripted models,
a web tier (daphne, LAB_ROLE=web) in the root namespace, one PostgreSQL and one Redis reached
over veth links. The real Claude Code on each host; a real Chromium on the web tier.

- runs on both hosts, started from the web tier's form, in one runs list;
- a reply to the run on b through the web tier, its answer streamed back over the socket;
- b's runner killed: its run reads unreachable within seconds, a's run is unaffected;
- b's runner restarted: the page it left catches up with what the agent wrote meanwhile,
  nothing lost and nothing shown twice;
- a message signed for host b, or naming b's run, sent to a's runner, is refused.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings
from playwright.sync_api import expect, sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.deploy.lab import OPERATOR, START_S, Deployment
from tests.deploy.netns import NetnsBed, tail, wait_for

pytestmark = [pytest.mark.live, pytest.mark.browser]
TIMEOUT_MS = int(START_S * 1000)


# The logs of the last run stay here for a reader (a test's tmp_path is rotated away).
LOGS = Path(__file__).resolve().parents[2] / "artifacts" / "deploy"


@pytest.fixture
def deployment() -> Iterator[Deployment]:
    shutil.rmtree(LOGS, ignore_errors=True)
    LOGS.mkdir(parents=True)
    with NetnsBed(("a", "b"), logs_dir=LOGS / "bed") as bed:
        lab = Deployment(bed, LOGS)
        try:
            yield lab.start()
        except BaseException:
            print(lab.logs())
            raise
        finally:
            if lab.web is not None:
                bed.kill(lab.web)


@pytest.fixture
def browser_page(deployment: Deployment) -> Iterator[Any]:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        ctx = browser.new_context(base_url=deployment.origin, viewport={"width": 1200, "height": 900})
        ctx.set_default_timeout(TIMEOUT_MS)
        page = ctx.new_page()
        page.goto("/")
        page.get_by_label("Username").fill(OPERATOR)
        page.get_by_label("Password").fill(deployment.password)
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("heading", name="Runs")).to_be_visible()
        try:
            yield page
        except BaseException:
            print(deployment.logs())
            raise
        finally:
            browser.close()


def start_run(page: Any, lab: Deployment, host: str, branch: str) -> str:
    """Start a run on `host` from the web tier's form; returns the run page's path."""
    page.goto("/")
    page.locator(f"#host-{host} a", has_text="New run here").click()
    expect(page).to_have_url(re.compile(rf"/hosts/{host}/runs/new/$"))
    expect(page.locator(".hosts-choice")).to_contain_text(f"It starts on host {host}")
    page.get_by_label("Repository").fill(str(lab.hosts[host].repo))
    page.get_by_label("Branch").fill(branch)
    page.get_by_role("button", name="Start").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.locator("#panel")).to_have_attribute("data-state", re.compile("idle|starting"))
    return re.sub(r"^https?://[^/]+", "", page.url).replace(f"/hosts/{host}", "")


def messages(page: Any) -> list[dict[str, Any]]:
    return page.eval_on_selector_all(
        "#transcript li[id^=msg-]",
        "els => els.map(e => ({id: e.id, seq: Number(e.dataset.seq), text: e.innerText.trim()}))",
    )


def send(page: Any, text: str) -> None:
    box = page.locator("#composer textarea")
    expect(box).to_be_enabled()
    box.fill(text)
    box.press("Enter")


def row_state(page: Any, run_path: str) -> str:
    run_id = re.search(r"/runs/(\d+)/", run_path)[1]  # type: ignore[index]
    return page.locator(f"#run-state-{run_id}").inner_text()


def test_two_hosts_behind_one_web_tier(deployment: Deployment, browser_page: Any) -> None:
    lab, page = deployment, browser_page

    # Runs on both hosts, in one list; each host up with its count.
    run_a = start_run(page, lab, "a", "lab/on-a")
    run_b = start_run(page, lab, "b", "lab/on-b")
    page.goto("/")
    for host in ("a", "b"):
        expect(page.locator(f"#host-{host}")).to_contain_text("up")
    expect(page.locator(".run-host")).to_have_count(2)

    # A reply to b's run through the web tier: the agent on b answers, streamed back.
    page.goto(run_b)
    page.wait_for_selector("#panel[data-state=idle]")
    send(page, "HOSTS-PING from the web tier")
    expect(page.locator("#transcript")).to_contain_text("You said: HOSTS-PING from the web tier")

    # b's terminal through the web tier: the relayed socket streams b's pane, as b's tmux has it.
    term = page.context.new_page()
    term.goto(run_b + "terminal/")
    expect(term.locator("#terminal")).to_have_attribute("data-live", "1")
    expect(term.locator("#terminal .xterm-rows")).to_contain_text("HOSTS-PING from the web tier")
    term.close()

    # Logins are per machine: the web tier sends the operator to a host's own Providers page.
    providers = page.context.new_page()
    providers.goto("/providers/")
    expect(providers.locator(".hosts-choice")).to_contain_text("choose one")
    providers.locator(".host-link", has_text="b").click()
    expect(providers).to_have_url(re.compile(r"/hosts/b/providers/$"))
    expect(providers.locator("#auth-card-claude-code")).to_be_visible()
    expect(providers.locator(".hosts-choice")).to_contain_text("The agents of host b")
    providers.close()

    # A slow turn on b (20 words, a second each), and b's runner dies during it: the agent on b
    # goes on and writes its answer while nothing of lab runs there.
    send(page, "SLOW turn across the outage")
    expect(page.locator("#panel")).to_have_attribute("data-state", "working")
    lab.kill_runner("b")
    killed = time.monotonic()
    expect(page.locator("#connection")).to_contain_text("host b has not answered", timeout=20_000)
    said_within = time.monotonic() - killed
    assert said_within < 20, said_within

    # The runs list says so for b's run, and a's run is unaffected (a reply there works).
    listing = page.context.new_page()
    listing.goto("/")
    expect(listing.locator(f"#run-state-{re.search(r'/runs/(\d+)/', run_b)[1]}")).to_have_text("unreachable")  # type: ignore[index]
    expect(listing.locator("#host-b")).to_contain_text("host b has not answered for")
    assert row_state(listing, run_a) == "idle"
    other = page.context.new_page()
    other.goto(run_a)
    other.wait_for_selector("#panel[data-state=idle]")
    send(other, "HOSTS-PING on a while b is away")
    expect(other.locator("#transcript")).to_contain_text("You said: HOSTS-PING on a while b is away")

    # The answer lands in b's transcript while its runner is away.
    wait_for(lambda: written(lab, "b", "word19"), 120, "the slow answer in b's transcript")

    # b's runner back: the page it left reconnects and catches up; nothing lost, nothing twice.
    lab.start_runner(lab.hosts["b"])
    lab.wait_up("b")
    expect(page.locator("#connection")).to_be_hidden(timeout=60_000)
    expect(page.locator("#panel")).to_have_attribute("data-state", "idle", timeout=TIMEOUT_MS)
    # Each run is watched on its own host, never by the web tier (which cannot see its files).
    leases = lab.watch_leases()
    assert sorted(addr for _, addr in leases) == sorted(lab.bed.host(h).host_ip for h in ("a", "b")), leases
    live = messages(page)
    page.reload()
    page.wait_for_selector("#panel[data-state=idle]")
    fresh = messages(page)
    assert [m["id"] for m in live] == [m["id"] for m in fresh]
    assert [m["text"] for m in live] == [m["text"] for m in fresh]
    assert len({m["id"] for m in live}) == len(live)
    assert sum("word19" in m["text"] for m in live) == 1, live[-3:]

    # Forged: messages that reach a's runner for b (or for b's run) are refused there.
    run_b_id = int(re.search(r"/runs/(\d+)/", run_b)[1])  # type: ignore[index]
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        answers = pool.submit(asyncio.run, forge(lab, run_b_id)).result(timeout=60)
    assert answers["for_b"]["status"] == 421 and b"is for host 'b'" in answers["for_b"]["body"]
    assert answers["b_run"]["status"] == 421 and b"lives on host b" in answers["b_run"]["body"]
    assert "refused a relay.http message" in tail(lab.hosts["a"].runner_log, 200)


def written(lab: Deployment, host: str, text: str) -> bool:
    """`text` is in one of the transcripts the agent of `host` wrote (its private home)."""
    for path in (lab.hosts[host].agent_home / ".claude" / "projects").rglob("*.jsonl"):
        if text in path.read_text(errors="replace"):
            return True
    return False


async def forge(lab: Deployment, run_id: int) -> dict[str, dict[str, Any]]:
    """Two signed messages put on a's channel by someone holding the deployment's key: one
    addressed to b, one addressed to a but naming b's run."""
    from channels_redis.core import RedisChannelLayer

    from hosts import protocol

    layer = RedisChannelLayer(hosts=[lab.bed.redis_url()])
    out = {}
    scope = {
        "method": "GET",
        "path": f"/runs/{run_id}/",
        "query_string": "",
        "headers": [["host", f"127.0.0.1:{lab.port}"]],
    }
    with override_settings(SECRET_KEY=lab.secret_key):
        for key, host in (("for_b", "b"), ("b_run", "a")):
            reply = await layer.new_channel()
            message = {
                "type": protocol.HTTP,
                "host": host,
                "id": key,
                "scope": scope,
                "body": b"",
                "reply": reply,
            }
            await layer.send(protocol.channel("a"), protocol.sign(message))
            out[key] = await asyncio.wait_for(layer.receive(reply), 30)
    await layer.close_pools()
    return out
