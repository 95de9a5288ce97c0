"""The installable app and Web Push in Chromium: the manifest passes Chromium's own
installability check, the service worker keeps only the static shell, and a push delivered to
the registered worker through the DevTools protocol (ServiceWorker.deliverPushMessage, what a
push service's message becomes in the browser) shows lab's notification, whose click opens the
run at its dialog. A real push service (FCM) is not reachable offline: the server's side is
proven against a local one in push/tests/."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from push.payload import Push
from tests.browser.conftest import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LIVE_TIMEOUT_MS,
    WS_PROBE,
    LabServer,
    RunPage,
    log_in,
)

pytestmark = pytest.mark.browser

NOTIFICATIONS = """() => navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((ns) =>
  ns.map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data })))"""


@pytest.fixture(scope="module")
def app_context(
    browser: Any, lab_server: LabServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A browser profile on disk, logged in: Chromium installs no app and keeps no push
    registration for an incognito context, which is what a plain context is."""
    ctx = browser.browser_type.launch_persistent_context(
        str(tmp_path_factory.mktemp("app-profile")),
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_ARGS,
        base_url=lab_server.url,
        viewport={"width": 1200, "height": 900},
    )
    ctx.set_default_timeout(LIVE_TIMEOUT_MS)
    ctx.add_init_script(WS_PROBE)
    try:
        page = ctx.new_page()
        log_in(page, lab_server.url)
        page.close()
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def app_page(app_context: Any) -> Iterator[Any]:
    page = app_context.new_page()
    try:
        yield page
    finally:
        page.close()


def _controlled(page: Any) -> None:
    """The page is controlled by lab's service worker (installed, activated, claimed)."""
    page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=LIVE_TIMEOUT_MS)


def _notifications(page: Any, until: Any) -> list[dict[str, Any]]:
    """The worker's shown notifications, once `until(them)` holds (asked again until then)."""
    deadline = time.monotonic() + LIVE_TIMEOUT_MS / 1000
    while not until(notes := page.evaluate(NOTIFICATIONS)):
        assert time.monotonic() < deadline, f"notifications stayed {notes}"
    return list(notes)


def _registration_id(page: Any, scope: str) -> tuple[Any, str]:
    """The DevTools session (its ServiceWorker domain on) and the id of lab's registration, once
    its worker is activated and running: a message DevTools delivers to a worker it is still
    starting or stopping was seen lost (1 run in 3)."""
    cdp = page.context.new_cdp_session(page)
    found: dict[str, str] = {}
    running: set[str] = set()

    def registrations(event: dict[str, Any]) -> None:
        for reg in event["registrations"]:
            if not reg.get("isDeleted"):
                found[reg["scopeURL"]] = reg["registrationId"]

    def versions(event: dict[str, Any]) -> None:
        for v in event["versions"]:
            if v["status"] == "activated" and v["runningStatus"] == "running":
                running.add(v["registrationId"])
            else:
                running.discard(v["registrationId"])

    cdp.on("ServiceWorker.workerRegistrationUpdated", registrations)
    cdp.on("ServiceWorker.workerVersionUpdated", versions)
    cdp.send("ServiceWorker.enable")
    deadline = time.monotonic() + LIVE_TIMEOUT_MS / 1000
    while scope not in found or found[scope] not in running:
        assert time.monotonic() < deadline, f"no running worker for {scope}: {found}, running {running}"
        page.evaluate("1")  # lets Playwright dispatch the session's events
    return cdp, found[scope]


def test_the_manifest_passes_chromiums_installability_check(app_page: Any, lab_server: LabServer) -> None:
    page = app_page
    page.goto("/")
    _controlled(page)
    cdp = page.context.new_cdp_session(page)
    assert cdp.send("Page.getInstallabilityErrors")["installabilityErrors"] == []
    manifest = cdp.send("Page.getAppManifest")
    assert manifest["url"] == f"{lab_server.url}/manifest.webmanifest"
    assert manifest["errors"] == []
    parsed = json.loads(manifest["data"])
    assert (parsed["start_url"], parsed["display"]) == ("/", "standalone")


def test_the_service_worker_keeps_the_static_shell_and_never_a_page(
    app_page: Any, lab_server: LabServer, chat_run: RunPage
) -> None:
    page = app_page
    page.goto(chat_run.url)
    _controlled(page)
    expect(page.locator("#transcript")).to_be_attached()
    page.reload()  # a controlled load: any page the worker kept would be in its cache now
    _controlled(page)
    kept = page.evaluate(
        """async () => {
          const urls = [];
          for (const name of await caches.keys()) {
            for (const req of await (await caches.open(name)).keys()) urls.push(new URL(req.url).pathname);
          }
          return urls;
        }"""
    )
    assert "/static/lab/lab.css" in kept and "/static/lab/feed.js" in kept
    assert [u for u in kept if not u.startswith("/static/")] == []


def test_a_push_shows_lab_s_notification_and_its_click_opens_the_run_at_its_dialog(
    app_context: Any, app_page: Any, lab_server: LabServer, chat_run: RunPage
) -> None:
    context, page = app_context, app_page
    context.grant_permissions(["notifications"], origin=lab_server.url)
    run_id = int(chat_run.url.rstrip("/").rsplit("/", 1)[-1])
    page.goto("/")
    _controlled(page)
    cdp, registration = _registration_id(page, f"{lab_server.url}/")
    # The tab saw the question first (feed.js, in a browser that gets pushes): its toast has
    # the push's tag, so the push that follows replaces it instead of showing a second one.
    state = page.evaluate(
        """(tag) => {
          localStorage.setItem("lab.push", "on");
          const options = { tag: tag, body: "tab", data: { target: "/" } };
          const shown = window.labPush.show("lab: from the tab", options, () => {});
          return shown.then(() => "shown", (e) => String(e));
        }""",
        f"lab-run-{run_id}-question",
    )
    assert state == "shown"
    assert _notifications(page, until=bool)[0]["title"] == "lab: from the tab"
    # What lab's sender encrypts for the browser; the push service hands the browser this text.
    push = Push(
        run_id=run_id, name=chat_run.name, kind="question", text="Which colour?", url=f"/runs/{run_id}/"
    )
    cdp.send(
        "ServiceWorker.deliverPushMessage",
        {"origin": lab_server.url, "registrationId": registration, "data": push.body()},
    )
    notes = _notifications(page, until=lambda ns: [n["title"] for n in ns] != ["lab: from the tab"])
    assert notes == [
        {
            "title": f"lab: {chat_run.name} asks: Which colour?",
            "body": "Which colour?",
            # The tag the tab's own notification has (static/lab/feed.js): one replaces the other.
            "tag": f"lab-run-{run_id}-question",
            "data": {"target": f"/runs/{run_id}/#dialog"},
        }
    ]

    # The click, as the browser dispatches it to the worker (no DevTools command clicks a
    # notification): the open lab tab goes to the run, at its dialog.
    [worker] = [w for w in context.service_workers if w.url == f"{lab_server.url}/sw.js"]
    worker.evaluate(
        """async (tag) => {
          const [n] = await self.registration.getNotifications({ tag });
          self.dispatchEvent(new NotificationEvent("notificationclick", { notification: n }));
        }""",
        push.tag,
    )
    expect(page).to_have_url(re.compile(re.escape(chat_run.url) + "#dialog$"))
    expect(page.locator("#dialog")).to_be_attached()
    assert _notifications(page, until=lambda ns: ns == []) == []  # the click closed it


def test_notify_me_subscribes_this_browser_or_says_why_it_cannot(
    app_context: Any, app_page: Any, lab_server: LabServer
) -> None:
    app_context.grant_permissions(["notifications"], origin=lab_server.url)
    page = app_page
    page.goto("/")
    _controlled(page)
    toggle = page.locator("#notify-toggle")
    expect(toggle).to_have_text("Notify me")
    toggle.click()
    expect(toggle).to_have_text("Notifications on")  # the tab's own notifications, either way
    status = page.locator("#push-status")
    expect(status).to_have_text("Subscribing this browser to notifications with the tab closed…")
    # Offline, Chromium's push service never answers; with one, lab lists this browser.
    expect(status).to_have_text(
        re.compile(
            r"^$|push service failed \(it did not answer in 15 s\)\. They show while a lab tab is open\.$"
        )
    )
    if status.inner_text():
        assert page.evaluate("localStorage.getItem('lab.push')") is None
    else:
        page.goto("/account/notifications/")
        expect(page.locator("table.devices tbody tr")).to_have_count(1)
