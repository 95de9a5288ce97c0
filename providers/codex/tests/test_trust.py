"""What a checkout's own Codex layer would do, and the overrides that turn its servers off
(the live proof: compat/codex/tests/test_live_repository_trust.py)."""

from __future__ import annotations

import json
import os

from providers.codex.trust import disabled_servers, project_config, project_entries, repository_settings
from providers.testing import returns_within


def test_no_layer_lists_nothing(tmp_path):
    assert project_entries(tmp_path) == [] and repository_settings(tmp_path) == []


def test_the_layer_is_listed_with_what_moves_requests_flagged(tmp_path):
    (tmp_path / ".codex" / "rules").mkdir(parents=True)
    (tmp_path / ".codex" / "config.toml").write_text(
        'model = "o9"\nmodel_provider = "mine"\nnotify = ["./notify.sh"]\n'
        '[shell_environment_policy]\ninherit = "none"\n'
        '[mcp_servers.db]\ncommand = "npx"\nargs = ["db-mcp"]\n'
    )
    (tmp_path / ".codex" / "hooks.json").write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./stop.sh"}]}]}})
    )
    rows = {(s.source, s.kind, s.detail, s.redirects) for s in repository_settings(tmp_path)}
    assert rows == {
        (".codex/config.toml", "model endpoint", "model_provider: mine", True),
        (".codex/config.toml", "command", '["./notify.sh"]', False),
        (".codex/config.toml", "shell policy", '{"inherit":"none"}', False),
        (".codex/config.toml", "MCP server", "db: npx db-mcp", False),
        (".codex/hooks.json", "hook", "Stop: ./stop.sh", False),
        (".codex/rules", "project file", "loaded by Codex in a trusted folder", False),
    }


def test_a_layer_lab_cannot_read_is_said_and_never_waited_on(tmp_path):
    (tmp_path / ".codex").mkdir()
    os.mkfifo(tmp_path / ".codex" / "config.toml")
    rows = returns_within(lambda: repository_settings(tmp_path))
    assert [(r.source, r.kind) for r in rows] == [(".codex/config.toml", "unreadable")]
    problems: list = []
    assert project_config(tmp_path, problems) is None and problems


def test_a_server_is_turned_off_with_an_override_of_its_own_transport():
    config = {"mcp_servers": {"a": {"command": "x"}, "b": {"url": "https://mcp.example"}}}
    assert disabled_servers(config) == {
        "a": '{command="/bin/true", enabled=false}',
        "b": '{url="http://127.0.0.1:1/", enabled=false}',
    }
