"""Gemini's login is an API key in lab's agent environment: configured, never verified."""

from __future__ import annotations

import pytest

from providers.errors import LoginFailed
from providers.gemini import GeminiProvider


def test_a_key_in_the_agent_environment_is_configured_not_verified(settings, tmp_path) -> None:
    settings.LAB_AGENT_HOME = str(tmp_path)
    settings.LAB_AGENT_ENV = {"GEMINI_API_KEY": "k"}
    status = GeminiProvider().auth_status()
    assert status.logged_in and not status.verified and "GEMINI_API_KEY" in status.external


def test_without_a_key_it_is_not_logged_in_and_login_says_where_the_key_goes(settings, tmp_path) -> None:
    settings.LAB_AGENT_HOME = str(tmp_path)
    settings.LAB_AGENT_ENV = {}
    provider = GeminiProvider()
    assert not provider.auth_status().logged_in
    with pytest.raises(LoginFailed, match="GEMINI_API_KEY in lab's agent environment"):
        provider.login_start()
