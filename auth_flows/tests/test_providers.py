"""GET /providers/: every enabled provider with its auth card (HTML) or as JSON."""

from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

pytestmark = pytest.mark.django_db
URL = "/providers/"


def test_it_keeps_the_url_name():
    assert reverse("auth_flows:providers") == URL


def test_it_shows_a_card_per_provider(authed_client):
    response = authed_client.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    for provider_id, name in (("fake", "Fake Agent"), ("keyed", "Keyed Agent"), ("ext", "Outside Agent")):
        assert f'id="auth-card-{provider_id}"' in html
        assert f'data-provider="{provider_id}"' in html
        assert f"<h2>{name}</h2>" in html
    assert 'ws-connect="/ws/lab/"' in html  # provider.auth.changed reaches this page
    assert "lab/lab.js" in html  # the copy buttons' one handler


def test_it_answers_json_when_asked(authed_client, fake):
    fake.logged_in = True
    response = authed_client.get(URL, headers={"accept": "application/json"})
    assert response.status_code == 200
    assert response.json()[0] == {
        "id": "fake",
        "display_name": "Fake Agent",
        "flow": {"kind": "oauth-code", "instructions": "Open the link and paste the code."},
        "status": {"logged_in": True, "account": "operator@example.invalid", "method": "oauth"},
    }
    assert [p["flow"]["kind"] for p in response.json()] == ["oauth-code", "api-key", "external"]


def test_a_browser_accept_header_gets_html(authed_client):
    accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    response = authed_client.get(URL, headers={"accept": accept})
    assert response["content-type"].startswith("text/html")


def test_it_requires_login(client):
    response = client.get(URL)
    assert response.status_code == 302
    assert "/login/" in response["location"]


def test_the_templates_name_no_provider():
    # docs/architecture.md, principle 3: names come from display_name(), never from a template.
    for template in (Path(settings.BASE_DIR) / "templates" / "auth_flows").glob("*.html"):
        assert "claude" not in template.read_text().lower(), template
