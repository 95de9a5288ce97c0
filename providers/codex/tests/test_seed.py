"""Trust for the worktree and lab's hooks, written the way Codex 0.171.0 writes them."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from providers.codex import seed
from providers.codex.seed import ConfigRefused, hook_trust_hash, install_hooks, trust_project
from providers.testing import returns_within


def test_the_hook_trust_hash_is_the_one_codex_writes():
    # Written by the real 0.171.0 when "Trust all and continue" was chosen on its hooks screen,
    # for a hooks.json whose every handler ran this command (compat/codex/COMPAT-adapter.md §6).
    command = "python3 -S /tmp/cxprobe/hook_spool.py /tmp/cxprobe/spool"
    assert hook_trust_hash("PreToolUse", "*", command) == (
        "sha256:8ac995e9753258a485eccca2943ffa37bd5009bf957332f323417cc1305cb803"
    )
    assert hook_trust_hash("SessionStart", None, command) == (
        "sha256:e17dec0e201e4fd36a2632135087bbc56433da19907b4cc63677a4c4f9cbfff0"
    )


def test_install_hooks_keeps_the_operators_own_and_is_idempotent(tmp_path: Path):
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    mine = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
    (codex_home / "hooks.json").write_text(json.dumps(mine))
    (codex_home / "config.toml").write_text('model = "x"\n')
    written = install_hooks(codex_home)
    assert set(written) == {codex_home / "hooks.json", codex_home / "config.toml"}
    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    assert hooks["Stop"][0] == mine["hooks"]["Stop"][0]
    assert hooks["Stop"][1]["hooks"][0]["command"] == seed.hook_command()
    state = tomllib.loads((codex_home / "config.toml").read_text())["hooks"]["state"]
    # Trusted under the index lab's handler really has: the operator's hook stays untrusted.
    assert f"{codex_home / 'hooks.json'}:stop:1:0" in state
    assert f"{codex_home / 'hooks.json'}:stop:0:0" not in state
    assert len(state) == len(seed.HOOK_EVENTS)
    assert install_hooks(codex_home) == []


def test_lab_s_earlier_hook_command_is_replaced_in_place_with_its_trust(tmp_path: Path):
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    old = "/usr/bin/python3 -S '/srv/lab dir/providers/codex/hook_spool.py'"
    mine = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": old}]}]}}
    (codex_home / "hooks.json").write_text(json.dumps(mine))
    install_hooks(codex_home)
    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    assert [g["hooks"][0]["command"] for g in hooks["Stop"]] == [seed.hook_command()]
    state = tomllib.loads((codex_home / "config.toml").read_text())["hooks"]["state"]
    assert state[f"{codex_home / 'hooks.json'}:stop:0:0"]["trusted_hash"] == hook_trust_hash(
        "Stop", None, seed.hook_command()
    )


def test_trust_project_adds_the_folder_once(tmp_path: Path):
    codex_home = tmp_path / ".codex"
    wt = tmp_path / "wt"
    wt.mkdir()
    assert trust_project(codex_home, wt) == [codex_home / "config.toml"]
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert config["projects"][str(wt)] == {"trust_level": "trusted"}
    assert trust_project(codex_home, wt) == []


def test_an_operators_decision_against_the_folder_is_left_alone(tmp_path: Path):
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    wt = tmp_path / "wt"
    wt.mkdir()
    original = f'[projects."{wt}"]\ntrust_level = "untrusted"\n'
    (codex_home / "config.toml").write_text(original)
    with pytest.raises(ConfigRefused):
        trust_project(codex_home, wt)
    assert (codex_home / "config.toml").read_text() == original


def test_a_symlinked_config_is_refused(tmp_path: Path):
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    (tmp_path / "elsewhere.toml").write_text("")
    (codex_home / "config.toml").symlink_to(tmp_path / "elsewhere.toml")
    with pytest.raises(ConfigRefused):
        trust_project(codex_home, tmp_path)


GUARD_NAMES = ["GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "LAB_GUARD_SEEDED"]


@pytest.mark.parametrize(
    ("policy", "dropped", "setting"),
    [
        ("", [], ""),
        ('[shell_environment_policy]\nexclude = ["AWS_*"]\n', [], ""),
        ("[shell_environment_policy]\nignore_default_excludes = true\n", [], ""),
        ('[shell_environment_policy]\ninclude_only = ["GIT_*", "lab_*"]\n', [], ""),
        ('[shell_environment_policy]\ninherit = "core"\n', sorted(GUARD_NAMES), "inherit = 'core'"),
        ('[shell_environment_policy]\ninherit = "none"\n', sorted(GUARD_NAMES), "inherit = 'none'"),
        (
            "[shell_environment_policy]\nignore_default_excludes = false\n",
            ["GIT_CONFIG_KEY_0"],
            "ignore_default_excludes = false",
        ),
        ('[shell_environment_policy]\nexclude = ["git_*"]\n', sorted(GUARD_NAMES[:3]), "exclude"),
        ('[shell_environment_policy]\nset = { GIT_CONFIG_COUNT = "0" }\n', ["GIT_CONFIG_COUNT"], "set"),
        ('[shell_environment_policy]\ninclude_only = ["PATH"]\n', sorted(GUARD_NAMES), "include_only"),
    ],
)
def test_shell_policy_drops_names_as_codex_would(tmp_path: Path, policy, dropped, setting):
    # compat/codex/COMPAT.md §14; the refusing cases are checked against the binary in
    # compat/codex/tests/test_live_commit_guard.py.
    (tmp_path / "config.toml").write_text('model = "m"\n\n' + policy)
    assert seed.shell_policy_drops(tmp_path, GUARD_NAMES) == (
        dropped,
        f"shell_environment_policy.{setting}" if setting else "",
    )


def test_shell_policy_with_no_config_drops_nothing(tmp_path: Path):
    assert seed.shell_policy_drops(tmp_path / "missing", GUARD_NAMES) == ([], "")


def test_the_selected_profiles_shell_policy_is_checked_too(tmp_path: Path):
    # A profile's policy could strip the guard while the top level says nothing: refused (how
    # Codex merges the two was not observed, so either one dropping a name is enough).
    (tmp_path / "config.toml").write_text(
        'profile = "work"\n\n[profiles.work.shell_environment_policy]\nexclude = ["GIT_*"]\n'
    )
    dropped, setting = seed.shell_policy_drops(tmp_path, GUARD_NAMES)
    assert setting == "profiles.work.shell_environment_policy.exclude"
    assert dropped and all(name.startswith("GIT_") for name in dropped)
    # An unselected profile changes nothing.
    (tmp_path / "config.toml").write_text('[profiles.work.shell_environment_policy]\nexclude = ["GIT_*"]\n')
    assert seed.shell_policy_drops(tmp_path, GUARD_NAMES) == ([], "")


def test_a_fifo_as_the_config_is_refused_at_once(tmp_path: Path):
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    os.mkfifo(codex_home / "config.toml")
    with pytest.raises(ConfigRefused, match="is a FIFO"):
        returns_within(lambda: trust_project(codex_home, tmp_path))
