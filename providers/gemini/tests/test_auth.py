"""Gemini's login status, read from what the CLI stored (Google sign-in) or the agent's
environment (an API key); logout removes the sign-in. The sign-in itself runs the real CLI:
compat/gemini/tests/test_live_login.py."""

from __future__ import annotations

import json

import pytest

from providers.errors import InvalidCode, LoginFailed
from providers.gemini import GeminiProvider, auth
from providers.schema import AuthFlowKind


@pytest.fixture
def provider(settings, tmp_path) -> GeminiProvider:
    settings.LAB_AGENT_HOME = str(tmp_path)
    settings.LAB_AGENT_ENV = {}
    return GeminiProvider()


def signed_in(
    provider: GeminiProvider, *, email: str = "op@example.invalid", selected: str = auth.GOOGLE
) -> None:
    """The files the CLI's sign-in leaves (COMPAT §10), as lab installs them."""
    d = provider.gemini_dir()
    d.mkdir(parents=True, exist_ok=True)
    (d / auth.CREDS).write_text(json.dumps({"access_token": "a", "refresh_token": "r"}))
    (d / auth.ACCOUNTS).write_text(json.dumps({"active": email, "old": []}))
    (d / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": selected}}, "hooks": {}})
    )


def test_the_card_offers_google_sign_in_and_names_the_key(provider) -> None:
    flow = provider.auth_flow()
    assert flow.kind is AuthFlowKind.OAUTH_CODE and flow.credential_name == "GEMINI_API_KEY"


def test_a_key_in_the_agent_environment_is_configured_not_verified(provider, settings) -> None:
    settings.LAB_AGENT_ENV = {"GEMINI_API_KEY": "k"}
    status = provider.auth_status()
    assert status.logged_in and not status.verified and "GEMINI_API_KEY" in status.detail
    # A Google sign-in would replace it (the selected method decides), so login stays offered.
    assert status.external == ""


def test_without_a_key_or_sign_in_it_is_not_logged_in(provider) -> None:
    status = provider.auth_status()
    assert not status.logged_in and "GEMINI_API_KEY is not set" in status.detail


def test_the_stored_sign_in_is_the_status_with_its_account(provider, settings) -> None:
    settings.LAB_AGENT_ENV = {"GEMINI_API_KEY": "k"}  # the selected method wins over the key
    signed_in(provider)
    status = provider.auth_status()
    assert (status.logged_in, status.verified, status.account, status.method) == (
        True,
        True,
        "op@example.invalid",
        auth.GOOGLE,
    )


def test_google_selected_without_credentials_is_not_logged_in(provider) -> None:
    signed_in(provider)
    (provider.gemini_dir() / auth.CREDS).unlink()
    status = provider.auth_status()
    assert not status.logged_in and "no stored Google credentials" in status.detail


def test_credentials_with_the_key_selected_are_the_keys_status(provider, settings) -> None:
    signed_in(provider, selected="gemini-api-key")
    assert not provider.auth_status().logged_in  # the CLI would use the (missing) key


def test_logout_removes_the_sign_in_and_keeps_the_operators_settings(provider) -> None:
    signed_in(provider)
    status = provider.logout()
    assert not status.logged_in
    d = provider.gemini_dir()
    assert not (d / auth.CREDS).exists()
    assert json.loads((d / auth.ACCOUNTS).read_text()) == {"active": None, "old": ["op@example.invalid"]}
    assert json.loads((d / "settings.json").read_text()) == {"security": {"auth": {}}, "hooks": {}}


def test_logout_with_a_key_says_where_it_is(provider, settings) -> None:
    settings.LAB_AGENT_ENV = {"GEMINI_API_KEY": "k"}
    signed_in(provider)
    with pytest.raises(
        LoginFailed, match=r"^Signed out of Google, but Gemini CLI still runs with GEMINI_API_KEY"
    ):
        provider.logout()
    assert not (provider.gemini_dir() / auth.CREDS).exists()
    with pytest.raises(LoginFailed, match=r"^Gemini CLI still runs with GEMINI_API_KEY"):
        provider.logout()


def test_a_code_without_a_pending_login_is_refused(provider) -> None:
    with pytest.raises(InvalidCode, match="No login is waiting"):
        provider.login_code("4/0Ab-code")


@pytest.mark.parametrize(
    ("code", "message"),
    [("", "Paste the code"), ("a b", "only letters"), ("x" * 513, "longer than")],
)
def test_a_malformed_code_is_refused_without_echoing_it(code, message) -> None:
    with pytest.raises(InvalidCode, match=message) as caught:
        auth.validate_code(code)
    assert code.strip() == "" or code not in str(caught.value)


def test_a_google_code_passes_validation() -> None:
    assert auth.validate_code(" 4/0AbCd-ef_gh.ij~kl \n") == "4/0AbCd-ef_gh.ij~kl"


def test_the_printed_link_must_be_googles_sign_in_page() -> None:
    assert auth._checked_url("https://accounts.google.com/o/oauth2/v2/auth?x=1")
    for bad in ("javascript:alert(1)", "https://evil.example/o", "https://accounts.google.com/a b"):
        with pytest.raises(LoginFailed):
            auth._checked_url(bad)
