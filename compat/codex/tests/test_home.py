"""The private CODEX_HOME: config.toml parses, hook trust uses Codex's own hash (checked against
hashes the 0.171.0 TUI wrote itself)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from compat.codex.home import (
    KEY_ENV,
    PROVIDER_ID,
    config_toml,
    hook_trust_hash,
    hooks_trust_toml,
    prepare_home,
)

# What the 0.171.0 TUI wrote to config.toml when "Trust all and continue" was picked for
# hooks.json handlers `python3 /tmp/cxp/hook.py <Event>` (groups with no matcher).
SEEN = {
    ("pre_tool_use", "PreToolUse"): "c0c4ccbd185a964cbacc086986203a976633c51a2a742d8407108fd46dddac94",
    (
        "permission_request",
        "PermissionRequest",
    ): "e780bab616be0d68aa5d16823f4fb1da6849da678e9fc233be402be31281774b",
    ("post_tool_use", "PostToolUse"): "d63f4f9f13abd55866fdacc1ed9342395cc4af44a295a9ef707cc757ef3dae6e",
    ("session_start", "SessionStart"): "e4c7b49afd094acfddac0a9657fa003bdb9c8d3e04840ca2bce9dbf5edeab3a1",
    (
        "user_prompt_submit",
        "UserPromptSubmit",
    ): "0e1dea05f68fe28e1f976e380b594c329e41bff7ab10196a8c30aafb4c41b2ee",
    ("stop", "Stop"): "52643c2fdba8354c0c31e0a02b3f71a8d0960ad657b67220dbe430fc6e0b809c",
}


def test_hook_trust_hash_equals_what_codex_wrote():
    for (snake, event), digest in SEEN.items():
        assert hook_trust_hash(snake, f"python3 /tmp/cxp/hook.py {event}") == f"sha256:{digest}"


def test_a_matcher_changes_the_hash():
    assert hook_trust_hash("stop", "x", matcher="*") != hook_trust_hash("stop", "x")


def test_hooks_trust_toml_keys_every_handler(tmp_path: Path):
    hooks = {
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "a"}, {"type": "command", "command": "b"}]}],
            "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "c"}]}],
        }
    }
    doc = tomllib.loads(hooks_trust_toml(tmp_path / "hooks.json", hooks))
    state = doc["hooks"]["state"]
    assert set(state) == {
        f"{tmp_path}/hooks.json:stop:0:0",
        f"{tmp_path}/hooks.json:stop:0:1",
        f"{tmp_path}/hooks.json:pre_tool_use:0:0",
    }
    assert state[f"{tmp_path}/hooks.json:pre_tool_use:0:0"]["trusted_hash"] == hook_trust_hash(
        "pre_tool_use", "c", matcher="*"
    )


def test_config_toml_parses_and_points_at_the_model(tmp_path: Path):
    doc = tomllib.loads(config_toml(tmp_path / 'w"t', "http://127.0.0.1:1/v1"))
    assert doc["model_provider"] == PROVIDER_ID
    provider = doc["model_providers"][PROVIDER_ID]
    assert provider["wire_api"] == "responses" and provider["env_key"] == KEY_ENV
    assert provider["base_url"] == "http://127.0.0.1:1/v1"
    assert doc["projects"][str(tmp_path / 'w"t')]["trust_level"] == "trusted"
    assert doc["approval_policy"] == "on-request" and doc["sandbox_mode"] == "workspace-write"


def test_prepare_home_writes_hooks_and_returns_a_complete_env(tmp_path: Path):
    hooks = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    env = prepare_home(tmp_path / "h", tmp_path / "wt", "http://x/v1", api_key="sk-1", hooks=hooks)
    assert env["CODEX_HOME"] == str(tmp_path / "h" / ".codex") and env["HOME"] == str(tmp_path / "h")
    assert env[KEY_ENV] == "sk-1"
    assert json.loads((tmp_path / "h/.codex/hooks.json").read_text()) == hooks
    doc = tomllib.loads((tmp_path / "h/.codex/config.toml").read_text())
    assert f"{tmp_path}/h/.codex/hooks.json:stop:0:0" in doc["hooks"]["state"]
