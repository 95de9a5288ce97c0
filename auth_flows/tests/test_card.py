"""One card template renders every AuthFlow kind from its descriptor."""

import pytest
from django.template.loader import render_to_string

from auth_flows import services
from auth_flows.tests.stubs import LOCAL_URL, LOGIN_URL

pytestmark = pytest.mark.django_db


def render(provider_id, **kwargs):
    return render_to_string(
        "auth_flows/card.html#card", {"card": services.provider_card(provider_id=provider_id, **kwargs)}
    )


def test_it_renders_oauth_code_with_a_login_button():
    html = render("fake")
    assert "Log in to Fake Agent" in html
    assert 'hx-post="/providers/fake/auth/login/start"' in html
    assert 'hx-target="#auth-card-fake"' in html and 'hx-swap="outerHTML"' in html
    assert "Open the link and paste the code." in html
    assert 'name="code"' not in html  # no code field before a login is started


def test_it_renders_a_pending_login_as_link_copy_and_code_field(fake):
    html = render("fake", login=fake.login_start())
    assert f'href="{LOGIN_URL}"' in html
    assert f'data-copy="{LOGIN_URL}"' in html
    assert 'rel="noopener noreferrer"' in html
    assert 'name="code"' in html and 'hx-post="/providers/fake/auth/login/code"' in html
    assert "From this machine, open the local link." in html
    assert f'href="{LOCAL_URL}"' in html
    assert "Log in to Fake Agent" not in html


def test_it_renders_api_key_as_instructions_and_credential_name():
    html = render("keyed")
    assert "<h2>Keyed Agent</h2>" in html
    assert "Set the key in lab&#x27;s agent environment and restart lab." in html
    assert "<code>KEYED_API_KEY</code>" in html
    assert "No key is set." in html
    assert "login/start" not in html and 'name="code"' not in html


def test_it_renders_external_as_status_only():
    html = render("ext")
    assert "<h2>Outside Agent</h2>" in html
    assert "Logged in" in html
    assert "login/start" not in html and "logout" not in html and 'name="code"' not in html


def test_a_logged_in_card_offers_logout(fake):
    fake.logged_in = True
    html = render("fake")
    assert "Logged in as <strong>operator@example.invalid</strong>" in html
    assert 'hx-post="/providers/fake/auth/logout"' in html


def test_it_escapes_what_the_provider_says(fake):
    html = render("fake", error='<script>alert("x")</script>')
    assert "<script>" not in html
    assert "&lt;script&gt;" in html


def test_a_configured_but_unverified_credential_is_not_called_logged_in():
    from providers.schema import AuthStatus

    status = AuthStatus(
        logged_in=True, method="api_key", detail="API key from ANTHROPIC_API_KEY", verified=False
    )
    html = render("fake", status=status)
    assert "Logged in" not in html
    assert "Credential configured · API key from ANTHROPIC_API_KEY · not verified" in html


def test_a_key_from_the_environment_offers_no_login_or_logout(fake):
    # The CLI keeps using such a key whatever lab's buttons do: a logout answered 502.
    from providers.schema import AuthStatus

    status = AuthStatus(
        logged_in=True,
        method="api_key",
        detail="API key from FAKE_API_KEY",
        verified=False,
        external="FAKE_API_KEY in the agent's environment",
    )
    html = render("fake", status=status)
    assert "Credential configured · API key from FAKE_API_KEY · not verified" in html
    assert "Fake Agent uses FAKE_API_KEY in the agent&#x27;s environment" in html
    assert "<code>LAB_AGENT_ENV</code>" in html
    assert "login/start" not in html and "auth/logout" not in html
    assert "Log in to Fake Agent" not in html and "Log out" not in html
