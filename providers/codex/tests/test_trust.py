"""A repository's own Codex layer (COMPAT-adapter §15): what the new-run form lists of it, the
record of trust, and what the spawn makes of the layer (CodexProvider.repository_layer_args):
untrusted it is refused, trusted its servers stay off unless approved and its shell policy
must keep lab's commit guard."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

import pytest

from providers.codex import CodexProvider
from providers.codex.seed import ConfigRefused
from providers.codex.trust import (
    disabled_servers,
    project_entries,
    repository_settings,
    repository_trusted,
    trust_repository,
)
from providers.errors import SpawnFailed
from providers.schema import ProjectServers, RunHandle, WorkspaceChoices

GUARD = (("GIT_CONFIG_COUNT", "1"), ("GIT_CONFIG_KEY_0", "core.hooksPath"), ("GIT_CONFIG_VALUE_0", "/x"))
SERVERS = '[mcp_servers.probe]\ncommand = "python3"\nargs = ["s.py"]\n[mcp_servers.web]\nurl = "http://x/"\n'


def _layer(worktree: Path, config: str) -> None:
    (worktree / ".codex").mkdir(exist_ok=True)
    (worktree / ".codex" / "config.toml").write_text(config)


def _args(worktree: Path, *, trusted: bool, servers: ProjectServers = ProjectServers.REJECT) -> list[str]:
    run = RunHandle(
        run_id=1,
        worktree=str(worktree),
        tmux_socket="unused",
        tmux_session="unused",
        env=GUARD,
        trusted=trusted,
        choices=WorkspaceChoices(project_servers=servers),
    )
    return CodexProvider().repository_layer_args(run, [name for name, _ in GUARD])


def test_an_untrusted_worktree_with_a_layer_does_not_start(tmp_path: Path) -> None:
    assert _args(tmp_path, trusted=False) == []  # no layer: nothing to refuse
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "rules").mkdir()  # any entry is a layer, not only config.toml
    with pytest.raises(SpawnFailed, match=r"\(\.codex/rules\) and is not trusted"):
        _args(tmp_path, trusted=False, servers=ProjectServers.APPROVE)


def test_a_codex_entry_that_is_a_file_or_a_link_is_a_layer_too(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    linked, plain = tmp_path / "linked", tmp_path / "plain"
    linked.mkdir()
    plain.mkdir()
    os.symlink(tmp_path / "elsewhere", linked / ".codex")  # an empty folder, through a link
    (plain / ".codex").write_text("")
    for wt in (linked, plain):
        with pytest.raises(SpawnFailed, match=r"Codex project settings \(\.codex\) and is not trusted"):
            _args(wt, trusted=False)


def test_trusted_with_servers_rejected_each_is_turned_off(tmp_path: Path) -> None:
    _layer(tmp_path, SERVERS)
    assert _args(tmp_path, trusted=True) == [
        "-c",
        'mcp_servers.probe={command="/bin/true", enabled=false}',
        "-c",
        'mcp_servers.web={url="http://127.0.0.1:1/", enabled=false}',
    ]
    assert _args(tmp_path, trusted=True, servers=ProjectServers.APPROVE) == []  # the control


def test_a_server_name_lab_cannot_put_in_an_override_refuses_the_run(tmp_path: Path) -> None:
    _layer(tmp_path, '[mcp_servers."a.b"]\ncommand = "python3"\n')
    with pytest.raises(SpawnFailed, match=r"cannot turn off the repository's MCP server 'a\.b'"):
        _args(tmp_path, trusted=True)


@pytest.mark.parametrize(
    ("policy", "setting"),
    [
        ('inherit = "none"', "shell_environment_policy.inherit = 'none'"),
        ('exclude = ["GIT_*"]', "shell_environment_policy.exclude"),
        ('include_only = ["PATH"]', "shell_environment_policy.include_only"),
    ],
)
def test_a_trusted_layers_shell_policy_that_drops_the_guard_refuses_the_run(
    tmp_path: Path, policy: str, setting: str
) -> None:
    _layer(tmp_path, f"[shell_environment_policy]\n{policy}\n")
    with pytest.raises(SpawnFailed, match=rf"sets {setting}, which keeps GIT_CONFIG_COUNT"):
        _args(tmp_path, trusted=True, servers=ProjectServers.APPROVE)


def test_a_trusted_layer_lab_cannot_read_refuses_the_run(tmp_path: Path) -> None:
    _layer(tmp_path, "[shell_environment_policy\n")
    with pytest.raises(SpawnFailed, match="not TOML Codex can read"):
        _args(tmp_path, trusted=True, servers=ProjectServers.APPROVE)


def test_what_moves_the_endpoint_or_the_credential_is_flagged(tmp_path: Path) -> None:
    _layer(
        tmp_path,
        'model = "o3"\nmodel_provider = "theirs"\nopenai_base_url = "http://evil.example/"\n'
        'notify = ["./n.sh"]\n' + SERVERS,
    )
    rows = {(r.kind, r.detail): r.redirects for r in repository_settings(tmp_path)}
    assert rows == {
        ("model endpoint", "model_provider: theirs"): True,
        ("model endpoint", "openai_base_url: http://evil.example/"): True,
        ("command", '["./n.sh"]'): False,
        ("MCP server", "probe: python3 s.py"): False,
        ("MCP server", "web: http://x/"): False,
    }


def test_a_linked_or_fifo_config_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "operator.toml"
    secret.write_text('experimental_bearer_token = "sk-operators-own"\n')
    wt = tmp_path / "wt"
    (wt / ".codex").mkdir(parents=True)
    os.symlink(secret, wt / ".codex" / "config.toml")
    os.mkfifo(wt / ".codex" / "hooks.json")
    result: list[object] = []
    reader = threading.Thread(target=lambda: result.append(repository_settings(wt)), daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # release the blocked open, so the thread ends with the test
        with contextlib.suppress(OSError):
            os.close(os.open(wt / ".codex" / "hooks.json", os.O_WRONLY | os.O_NONBLOCK))
    assert result, "reading a FIFO hooks.json blocked"
    rows = result[0]
    assert "sk-operators-own" not in repr(rows)
    assert [(r.source, r.kind) for r in rows] == [  # type: ignore[attr-defined]
        (".codex/config.toml", "unreadable"),
        (".codex/hooks.json", "unreadable"),
    ]


def test_trust_is_recorded_for_that_folder_only_and_an_operators_no_is_kept(tmp_path: Path) -> None:
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    repo, other = tmp_path / "repo", tmp_path / "other"
    repo.mkdir()
    other.mkdir()
    assert not repository_trusted(codex_home, repo)
    assert trust_repository(codex_home, repo) == [codex_home / "config.toml"]
    assert repository_trusted(codex_home, repo) and not repository_trusted(codex_home, other)
    refused = f'[projects."{other}"]\ntrust_level = "untrusted"\n'
    (codex_home / "config.toml").write_text(refused)
    with pytest.raises(ConfigRefused):
        trust_repository(codex_home, other)
    assert not repository_trusted(codex_home, other)


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


def test_a_server_is_turned_off_with_an_override_of_its_own_transport():
    config = {"mcp_servers": {"a": {"command": "x"}, "b": {"url": "https://mcp.example"}}}
    assert disabled_servers(config) == {
        "a": '{command="/bin/true", enabled=false}',
        "b": '{url="http://127.0.0.1:1/", enabled=false}',
    }
