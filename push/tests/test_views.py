"""The pages of push: a browser's subscription (its "Notify me" click) stored, refused with the
reason when it is bad, listed on the account page and revocable there; the manifest and the
service worker served to a browser without a login (it fetches them without cookies)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User

from push import sender
from push.models import Subscription
from push.tests.push_service import Browser, b64e

ENDPOINT = "https://fcm.googleapis.com/fcm/send/abc123"


def _subscription(endpoint: str = ENDPOINT, **keys: str) -> dict[str, object]:
    browser = Browser()
    return {"endpoint": endpoint, "keys": {"p256dh": browser.p256dh, "auth": b64e(browser.auth), **keys}}


def _post(client, url: str, body: object):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(
        url,
        data,
        content_type="application/json",
        HTTP_USER_AGENT="Mozilla/5.0 (Linux; Android 15) Chrome/140",
    )


@pytest.fixture
def push_enabled(settings, tmp_path):
    settings.LAB_PUSH = True
    settings.LAB_PUSH_KEY_FILE = tmp_path / "vapid_private.pem"
    sender._key_cache.clear()
    yield
    sender._key_cache.clear()


@pytest.mark.django_db
def test_a_browser_subscribes_and_is_listed_on_the_account_page(authed_client, operator, push_enabled):
    key = authed_client.get("/push/key/").json()
    assert key == {"enabled": True, "key": sender.public_key(), "reason": ""}

    assert _post(authed_client, "/push/subscribe/", _subscription()).status_code == 201
    again = _subscription()  # the same browser subscribing again (new keys): one row, updated
    assert _post(authed_client, "/push/subscribe/", again).status_code == 201
    sub = Subscription.objects.get()
    assert (sub.user, sub.p256dh, sub.label) == (operator, again["keys"]["p256dh"], "Chrome on Android")

    page = authed_client.get("/account/notifications/").content.decode()
    assert "Chrome on Android" in page and "fcm.googleapis.com" in page
    assert "abc123" not in page  # the endpoint is a capability: never shown whole
    assert "Push is on" in page and "Home Screen" in page


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("not json", "the subscription is not JSON"),
        ([1, 2], "the subscription is not a JSON object"),
        (_subscription("http://push.example/x"), "the endpoint must be an https URL of a push service"),
        (_subscription("javascript:alert(1)"), "the endpoint must be an https URL of a push service"),
        (_subscription(p256dh=b64e(b"\x04" * 33)), "keys.p256dh must be 65 bytes, got 33"),
        (_subscription(auth="***"), "keys.auth is not base64url"),
        ({"endpoint": ENDPOINT}, "keys.p256dh is missing"),
    ],
)
def test_a_bad_subscription_is_refused_with_the_reason_and_nothing_is_kept(
    authed_client, push_enabled, body, says
):
    response = _post(authed_client, "/push/subscribe/", body)
    assert response.status_code == 400
    assert response.json() == {"error": f"Not subscribed: {says}."}
    assert not Subscription.objects.exists()


@pytest.mark.django_db
def test_with_push_off_the_page_and_the_subscription_say_why(authed_client, settings):
    settings.LAB_PUSH = False
    settings.LAB_ORIGIN = "http://192.168.1.5:8000"
    response = _post(authed_client, "/push/subscribe/", _subscription())
    assert response.status_code == 409
    assert "https origin" in response.json()["error"]
    assert authed_client.get("/push/key/").json()["enabled"] is False
    page = authed_client.get("/account/notifications/").content.decode()
    assert "Push is off" in page and "http://192.168.1.5:8000" in page
    assert not Subscription.objects.exists()


@pytest.mark.django_db
def test_an_operator_revokes_their_own_browser_and_no_one_else_s(authed_client, operator, push_enabled):
    other = User.objects.create_user("someone", password="x" * 16)
    mine = Subscription.objects.create(
        user=operator, endpoint=ENDPOINT, p256dh="p", auth="a", label="Firefox on Linux"
    )
    theirs = Subscription.objects.create(
        user=other, endpoint=ENDPOINT + "2", p256dh="p", auth="a", label="Edge on Windows"
    )
    page = authed_client.get("/account/notifications/").content.decode()
    assert "Firefox on Linux" in page and "Edge on Windows" not in page

    assert authed_client.post(f"/account/notifications/{theirs.pk}/revoke/").status_code == 404
    response = authed_client.post(f"/account/notifications/{mine.pk}/revoke/")
    assert response.status_code == 302
    assert list(Subscription.objects.all()) == [theirs]
    assert "No browser is subscribed" in authed_client.get("/account/notifications/").content.decode()


@pytest.mark.django_db
def test_turning_notifications_off_removes_this_browser(authed_client, operator, push_enabled):
    Subscription.objects.create(user=operator, endpoint=ENDPOINT, p256dh="p", auth="a")
    assert _post(authed_client, "/push/unsubscribe/", {"endpoint": ENDPOINT}).json() == {"removed": True}
    assert not Subscription.objects.exists()
    assert _post(authed_client, "/push/unsubscribe/", "[]").status_code == 400


@pytest.mark.django_db
def test_the_manifest_and_the_worker_are_served_without_a_login(client):
    manifest = client.get("/manifest.webmanifest")
    assert manifest.status_code == 200 and manifest["Content-Type"] == "application/manifest+json"
    data = json.loads(manifest.content)
    assert (data["start_url"], data["scope"], data["display"]) == ("/", "/", "standalone")
    assert {i["sizes"] for i in data["icons"]} == {"192x192", "512x512"}

    worker = client.get("/sw.js")
    assert worker.status_code == 200 and worker["Content-Type"].startswith("text/javascript")
    assert worker["Service-Worker-Allowed"] == "/"
    body = worker.content.decode()
    shell = json.loads(body.split("const SHELL = ", 1)[1].split(";\n", 1)[0])
    # The shell is static files only: nothing the worker keeps is a page.
    assert shell and all(url.startswith("/static/") for url in shell)
