"""Live, offline: `codex login --with-api-key` reads the key on stdin and `codex login status`
reports it; the TUI needs no login at all with a custom provider (COMPAT.md §12)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from compat.codex.home import codex_binary

pytestmark = pytest.mark.live


def codex(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    return subprocess.run(
        [str(codex_binary()), *args], input=stdin, env=env, capture_output=True, text=True, timeout=60
    )


def test_login_with_api_key_on_stdin_then_status_then_logout(tmp_path):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    status = codex(home, "login", "status")
    assert status.returncode == 1 and "Not logged in" in status.stderr + status.stdout
    key = "sk-test-LOGIN-0123456789"
    login = codex(home, "login", "--with-api-key", stdin=key + "\n")
    assert login.returncode == 0, login.stderr
    assert "API key saved" in login.stderr + login.stdout
    auth = home / ".codex" / "auth.json"
    assert json.loads(auth.read_text()) == {"auth_mode": "apikey", "OPENAI_API_KEY": key}
    assert (auth.stat().st_mode & 0o777) == 0o600
    status = codex(home, "login", "status")
    assert status.returncode == 0
    out = status.stderr + status.stdout
    assert "API key configured" in out and key not in out, "status masks the key"
    logout = codex(home, "logout")
    assert logout.returncode == 0 and not auth.exists()


def test_a_missing_codex_home_is_an_error_not_created(tmp_path):
    home = tmp_path / "home"
    result = codex(home, "login", "status")
    assert result.returncode == 1
    assert "CODEX_HOME points to" in result.stderr and "does not exist" in result.stderr
    assert not (home / ".codex").exists()


def test_the_tui_on_a_custom_provider_needs_no_login(codex_tui, codex_home):
    tui = codex_tui()
    assert not (codex_home.codex_home / "auth.json").exists()
    assert "Sign in" not in tui.pane()
