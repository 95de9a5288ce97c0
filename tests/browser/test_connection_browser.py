"""The page's link to lab (static/lab/connection.js), in a real Chromium against a real lab:
a socket closed *normally* is reopened, the page says "disconnected — reconnecting" while it
is down, and a send that fails says its real cause, with no older error left beside it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import text, when
from tests.browser.conftest import LabServer, RunPage

pytestmark = pytest.mark.browser

# Records every state the indicator shows, so a test sees it even when the reconnect is quick.
WATCH_INDICATOR = """() => {
  window.__conn = [];
  const el = document.getElementById("connection");
  new MutationObserver(() => window.__conn.push({hidden: el.hidden, text: el.textContent}))
    .observe(el, {attributes: true, childList: true, characterData: true, subtree: true});
}"""


def open_through(page: Any, run: RunPage) -> list[Any]:
    """Open the run page with its socket passed through a route the test can close."""
    routes: list[Any] = []

    def handler(ws: Any) -> None:
        ws.connect_to_server()
        routes.append(ws)

    page.route_web_socket(re.compile(r"/ws/runs/\d+/$"), handler)
    page.goto(run.url)
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    page.evaluate(WATCH_INDICATOR)
    return routes


@pytest.mark.parametrize("code", [1000, 1001, 4000])
def test_a_normally_closed_socket_is_reopened_and_the_page_says_so_meanwhile(
    page: Any, chat_run: RunPage, code: int
) -> None:
    routes = open_through(page, chat_run)
    opens = page.evaluate("window.__ws.opens")
    routes[-1].close(code=code, reason="closed by the test")
    page.wait_for_function(f"() => window.__ws.closes.includes({code})")
    page.wait_for_function(f"() => window.__ws.opens > {opens}", timeout=30_000)
    shown = page.evaluate("window.__conn")
    assert {"hidden": False, "text": "Disconnected — reconnecting…"} in shown, shown
    expect(page.locator("#connection")).to_be_hidden()
    assert len(routes) == 2  # a new socket reached lab


def test_a_failed_send_says_its_real_cause_and_keeps_the_text(
    page: Any, chat_run: RunPage, lab_server: LabServer
) -> None:
    page.goto(chat_run.url)
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    box = page.locator("#composer textarea")
    # An older, unrelated error on screen, as a refused send leaves one.
    page.evaluate(
        """() => document.querySelector("#composer").insertAdjacentHTML(
             "afterbegin", '<p class="error" role="alert">An older error.</p>')"""
    )

    page.route("**/reply/", lambda route: route.abort("internetdisconnected"))
    box.fill("CONN one")
    box.press("Enter")
    banner = page.locator("#send-error")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("No answer from lab: the network is down or lab is not running")
    expect(page.locator("#composer .error")).to_have_count(0)
    expect(box).to_have_value("CONN one")
    page.unroute("**/reply/")

    page.route(
        "**/reply/",
        lambda route: route.fulfill(status=503, content_type="text/html", body="<h1>lab is restarting</h1>"),
    )
    box.press("Enter")
    expect(banner).to_contain_text("lab answered 503")
    expect(banner).to_contain_text("lab is restarting")
    expect(page.locator("#composer")).to_be_visible()  # not replaced by the error page
    expect(box).to_have_value("CONN one")
    page.unroute("**/reply/")

    # A proxy's 502: a status lab answers a refusal with too, but without lab's HX-Reswap it is
    # not lab's answer, and it must not take the composer's place (and its draft).
    page.route(
        "**/reply/",
        lambda route: route.fulfill(status=502, content_type="text/html", body="<h1>502 Bad Gateway</h1>"),
    )
    box.press("Enter")
    expect(banner).to_contain_text("lab answered 502")
    expect(banner).to_contain_text("502 Bad Gateway")
    expect(page.locator("#composer")).to_be_visible()
    expect(box).to_have_value("CONN one")
    page.unroute("**/reply/")

    lab_server.model.script.add(when("CONN", text("connection ok")))
    box.press("Enter")
    expect(page.locator("#transcript .msg-user_text").last).to_have_text("CONN one")
    expect(banner).to_be_hidden()
