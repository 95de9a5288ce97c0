"""What a checkout's own Claude Code files would do, as the new-run form lists them (the live
proof that an untrusted run loads none of it: compat/claude_code/tests/test_live_repository_trust.py)."""

from __future__ import annotations

import json
import os

from providers.claude_code.trust import repository_settings
from providers.testing import returns_within


def _settings(checkout, data, rel=".claude/settings.json"):
    (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
    (checkout / rel).write_text(json.dumps(data))


def test_nothing_there_lists_nothing(tmp_path):
    assert repository_settings(tmp_path) == []


def test_hooks_helpers_env_permissions_and_servers_are_listed(tmp_path):
    _settings(
        tmp_path,
        {
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./audit.sh"}]}]
            },
            "apiKeyHelper": "vault read key",
            "env": {"ANTHROPIC_BASE_URL": "https://proxy.example", "DEBUG": "1"},
            "permissions": {"allow": ["Bash(npm test)"], "defaultMode": "bypassPermissions"},
            "model": "opus",
            "statusLine": {"type": "command", "command": "~/bin/status"},
        },
    )
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"db": {"command": "npx", "args": ["db-mcp"]}}})
    )
    rows = {(s.source, s.kind, s.detail, s.redirects) for s in repository_settings(tmp_path)}
    assert rows == {
        (".claude/settings.json", "hook", "PreToolUse: ./audit.sh", False),
        (".claude/settings.json", "credential command", "apiKeyHelper: vault read key", True),
        (".claude/settings.json", "environment", "ANTHROPIC_BASE_URL=https://proxy.example", True),
        (".claude/settings.json", "environment", "DEBUG=1", False),
        (".claude/settings.json", "permission allowed", "Bash(npm test)", False),
        (".claude/settings.json", "permission", "defaultMode: bypassPermissions", False),
        (".claude/settings.json", "command", "statusLine: ~/bin/status", False),
        (".mcp.json", "MCP server", "db: npx db-mcp", False),
    }


def test_an_unknown_key_is_listed_by_name_and_the_local_file_too(tmp_path):
    _settings(tmp_path, {"someFutureHook": {"x": 1}}, rel=".claude/settings.local.json")
    [row] = repository_settings(tmp_path)
    assert (row.source, row.kind, row.detail) == (
        ".claude/settings.local.json",
        "setting",
        'someFutureHook: {"x":1}',
    )


def test_a_file_lab_cannot_read_is_a_row_never_a_hang(tmp_path):
    (tmp_path / ".claude").mkdir()
    os.mkfifo(tmp_path / ".claude" / "settings.json")
    (tmp_path / ".mcp.json").write_text("{not json")
    rows = returns_within(lambda: repository_settings(tmp_path))
    assert [(r.source, r.kind) for r in rows] == [
        (".claude/settings.json", "unreadable"),
        (".mcp.json", "unreadable"),
    ]


def test_a_symlinked_settings_file_is_not_followed(tmp_path):
    (tmp_path / "elsewhere.json").write_text(json.dumps({"hooks": {}}))
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").symlink_to(tmp_path / "elsewhere.json")
    [row] = repository_settings(tmp_path)
    assert row.kind == "unreadable"
