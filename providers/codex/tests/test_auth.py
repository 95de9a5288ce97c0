"""Codex's API-key login, against the real pinned binary (offline: the CLI checks the key only
when it sends a request) in a private CODEX_HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from providers.codex import CodexProvider
from providers.errors import LoginFailed
from providers.schema import AuthFlowKind


@pytest.fixture
def provider(tmp_path, settings):
    from compat.codex.home import launcher_dir

    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    settings.LAB_AGENT_HOME = str(home)
    settings.LAB_AGENT_ENV = {}
    settings.LAB_AGENT_BIN_DIR = str(launcher_dir())
    return CodexProvider()


def test_the_flow_is_an_api_key_that_names_its_credential(provider):
    flow = provider.auth_flow()
    assert flow.kind == AuthFlowKind.API_KEY and flow.credential_name == "OPENAI_API_KEY"
    with pytest.raises(LoginFailed):
        provider.login_start()


@pytest.mark.live
def test_a_key_is_stored_by_the_cli_from_stdin_and_never_verified(provider):
    assert provider.auth_status().logged_in is False
    status = provider.login_code("sk-lab-test-0123456789")
    assert status.logged_in and status.method == "api-key" and status.verified is False
    assert "sk-lab-test-0123456789" not in status.detail  # the CLI masks it
    stored = json.loads((Path(provider.codex_home()) / "auth.json").read_text())
    assert stored["OPENAI_API_KEY"] == "sk-lab-test-0123456789"
    assert provider.logout().logged_in is False
    with pytest.raises(LoginFailed):
        provider.login_code("not a key")


def test_a_custom_model_provider_with_its_key_in_the_env_needs_no_login(provider, settings):
    (Path(provider.codex_home()) / "config.toml").write_text(
        'model_provider = "mine"\n[model_providers.mine]\nbase_url = "http://127.0.0.1:9/v1"\n'
        'wire_api = "responses"\nenv_key = "MY_KEY"\n'
    )
    settings.LAB_AGENT_ENV = {"MY_KEY": "sk-x"}
    status = provider.auth_status()
    assert status.logged_in and status.verified is False and "MY_KEY" in status.detail
