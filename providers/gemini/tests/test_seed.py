"""Gemini's grants in its home: lab's hooks and first-run settings, folder trust; the
repository's own files; the commit guard's hooks path repeated where the CLI's shell keeps it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from providers.gemini.provider import guard_parameters
from providers.gemini.seed import (
    HOOK_EVENTS,
    ConfigRefused,
    folder_trusted,
    install_settings,
    trust_folder,
)
from providers.gemini.trust import project_files, repository_settings


def test_lab_hooks_are_installed_once_beside_the_operators_own(tmp_path: Path) -> None:
    gemini = tmp_path / ".gemini"
    gemini.mkdir()
    own = {"hooks": [{"type": "command", "command": "notify-me"}]}
    (gemini / "settings.json").write_text(json.dumps({"hooks": {"AfterAgent": [own]}, "ui": {"theme": "x"}}))
    install_settings(gemini)
    install_settings(gemini)
    settings = json.loads((gemini / "settings.json").read_text())
    assert settings["ui"] == {"theme": "x"}
    assert settings["hooks"]["AfterAgent"][0] == own
    for event in HOOK_EVENTS:
        labs = [g for g in settings["hooks"][event] if g["hooks"][0].get("name") == "lab"]
        assert len(labs) == 1, event
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["general"]["enableAutoUpdate"] is False


def test_a_settings_file_lab_cannot_read_is_refused_and_left_alone(tmp_path: Path) -> None:
    gemini = tmp_path / ".gemini"
    gemini.mkdir()
    (gemini / "settings.json").write_text("{not json")
    with pytest.raises(ConfigRefused, match="not JSON"):
        install_settings(gemini)
    assert (gemini / "settings.json").read_text() == "{not json"


def test_folder_trust_is_written_as_the_cli_writes_it(tmp_path: Path) -> None:
    gemini = tmp_path / ".gemini"
    repo = tmp_path / "repo"
    repo.mkdir()
    assert not folder_trusted(gemini, repo)
    trust_folder(gemini, repo, True)
    assert json.loads((gemini / "trustedFolders.json").read_text()) == {str(repo.resolve()): "TRUST_FOLDER"}
    assert folder_trusted(gemini, repo)


def test_the_repositorys_gemini_files_are_listed(tmp_path: Path) -> None:
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text(
        json.dumps({"hooks": {"BeforeTool": [{"hooks": [{"command": "run-me"}]}]}, "mcpServers": {"db": {}}})
    )
    (tmp_path / ".env").write_text("GOOGLE_GEMINI_BASE_URL=https://elsewhere\nPLAIN=1\n")
    assert project_files(tmp_path) == [".gemini/settings.json", ".env"]
    rows = {(r.kind, r.detail, r.redirects) for r in repository_settings(tmp_path)}
    assert ("hook", "BeforeTool: run-me", False) in rows
    assert ("MCP server", "db: {}", False) in rows
    assert ("environment", "GOOGLE_GEMINI_BASE_URL", True) in rows
    assert ("environment", "PLAIN", False) in rows


def test_the_guards_hooks_path_is_repeated_in_git_config_parameters() -> None:
    env = {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "a.b", "GIT_CONFIG_VALUE_0": "1"}
    env |= {"GIT_CONFIG_KEY_1": "core.hooksPath", "GIT_CONFIG_VALUE_1": "/data/it's hooks"}
    assert guard_parameters(env) == {"GIT_CONFIG_PARAMETERS": "'core.hooksPath'='/data/it'\\''s hooks'"}
    assert guard_parameters({**env, "GIT_CONFIG_PARAMETERS": "'x.y'='z'"})[
        "GIT_CONFIG_PARAMETERS"
    ].startswith("'x.y'='z' 'core.hooksPath'=")
    assert guard_parameters({"PATH": "/bin"}) == {}
