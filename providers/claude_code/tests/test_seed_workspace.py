"""seed_workspace: trust in ~/.claude.json, atomically, every other key kept, one backup."""

from __future__ import annotations

import json
import os
import stat

import pytest

from providers.claude_code import seed as seed_mod
from providers.claude_code.seed import ConfigRefused, repository_trusted, seed_workspace, trust_repository
from providers.errors import ProviderError
from providers.schema import ProjectServers, WorkspaceChoices
from providers.testing import returns_within

TRUST = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def wt(tmp_path):
    w = tmp_path / "wt"
    w.mkdir()
    return w


def config(home):
    return json.loads((home / ".claude.json").read_text())


def test_it_marks_the_realpath_trusted_in_a_new_config(home, wt):
    written = seed_workspace(wt, home=home)
    assert written == [home / ".claude.json"]
    assert config(home) == {"hasCompletedOnboarding": True, "projects": {str(wt.resolve()): TRUST}}
    assert stat.S_IMODE((home / ".claude.json").stat().st_mode) == 0o600


def test_it_keys_by_the_realpath_of_a_symlinked_worktree(home, wt, tmp_path):
    (tmp_path / "link").symlink_to(wt)
    seed_workspace(tmp_path / "link", home=home)
    assert list(config(home)["projects"]) == [str(wt.resolve())]


def test_it_keeps_every_other_key_and_backs_up_once(home, wt):
    original = {
        "hasCompletedOnboarding": True,
        "oauthAccount": {"emailAddress": "op@example.com"},
        "customApiKeyResponses": {"approved": ["abc"], "rejected": []},
        "projects": {
            "/elsewhere": {"hasTrustDialogAccepted": False, "allowedTools": ["Bash"]},
            str(wt): {"allowedTools": ["Read"], "mcpServers": {}, "hasTrustDialogAccepted": False},
        },
        "ünicode": "kept ✓",
    }
    raw = json.dumps(original, indent=4).encode()
    (home / ".claude.json").write_bytes(raw)
    (home / ".claude.json").chmod(0o640)
    written = seed_workspace(wt, home=home)
    assert written == [home / ".claude.json.lab-backup", home / ".claude.json"]
    assert (home / ".claude.json.lab-backup").read_bytes() == raw
    expected = json.loads(raw)
    expected["projects"][str(wt)].update(TRUST)
    assert config(home) == expected
    assert stat.S_IMODE((home / ".claude.json").stat().st_mode) == 0o640

    other = wt.parent / "wt2"
    other.mkdir()
    assert seed_workspace(other, home=home) == [home / ".claude.json"]
    assert (home / ".claude.json.lab-backup").read_bytes() == raw  # one generation: the pre-lab file


def test_it_is_idempotent(home, wt):
    seed_workspace(wt, home=home)
    before = (home / ".claude.json").stat().st_mtime_ns, (home / ".claude.json").read_bytes()
    assert seed_workspace(wt, home=home) == []
    assert ((home / ".claude.json").stat().st_mtime_ns, (home / ".claude.json").read_bytes()) == before


def test_it_never_grants_hooks_or_permission_bypasses(home, wt):
    (home / ".claude.json").write_text(json.dumps({"projects": {}}))
    seed_workspace(wt, home=home)
    # Exactly onboarding and the two trust keys: no hooks, no bypass.
    assert config(home) == {"hasCompletedOnboarding": True, "projects": {str(wt): TRUST}}
    assert not (home / ".claude").exists()  # no settings.json either


def test_it_writes_through_a_symlinked_config(home, wt, tmp_path):
    real = tmp_path / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"theme": "dark"}))
    (home / ".claude.json").symlink_to(real)
    seed_workspace(wt, home=home)
    assert (home / ".claude.json").is_symlink()
    assert json.loads(real.read_text())["theme"] == "dark"
    assert str(wt) in json.loads(real.read_text())["projects"]


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"projects": []}', '{"projects": {"%s": 3}}'])
def test_it_leaves_a_config_it_cannot_read_alone(home, wt, content):
    content = content.replace("%s", str(wt))
    (home / ".claude.json").write_text(content)
    with pytest.raises(ConfigRefused):
        seed_workspace(wt, home=home)
    assert (home / ".claude.json").read_text() == content
    assert issubclass(ConfigRefused, ProviderError)


def test_it_does_not_replace_a_version_it_did_not_read(home, wt, monkeypatch):
    """The CLI rewrites the file while running: a change between read and rename is retried."""
    (home / ".claude.json").write_text(json.dumps({"numStartups": 1}))
    real_read = seed_mod._read
    calls = {"n": 0}

    def racing_read(path):
        calls["n"] += 1
        if calls["n"] == 2:  # the re-check before the first rename: the CLI wrote meanwhile
            path.write_text(json.dumps({"numStartups": 2, "tipsHistory": {"x": 1}}))
            os.utime(path, ns=(1, 1))
        return real_read(path)

    monkeypatch.setattr(seed_mod, "_read", racing_read)
    seed_workspace(wt, home=home)
    assert config(home) == {
        "numStartups": 2,
        "tipsHistory": {"x": 1},
        "hasCompletedOnboarding": True,
        "projects": {str(wt): TRUST},
    }


def test_no_temp_files_are_left_behind(home, wt):
    seed_workspace(wt, home=home)
    assert sorted(p.name for p in home.iterdir()) == [".claude.json"]


# --- the operator's choices: .claude/settings.local.json (COMPAT-seeding §4, §5) -------------

OFF = WorkspaceChoices(attribution=False)


def local_settings(wt):
    return json.loads((wt / ".claude" / "settings.local.json").read_text())


def mcp_json(wt, *names):
    (wt / ".mcp.json").write_text(json.dumps({"mcpServers": {n: {"command": "true"} for n in names}}))


def test_the_defaults_write_no_settings_file_without_a_project_server(home, wt):
    assert seed_workspace(wt, home=home) == [home / ".claude.json"]
    assert not (wt / ".claude").exists()


def test_attribution_off_writes_the_cli_setting_that_hides_both_lines(home, wt):
    written = seed_workspace(wt, home=home, choices=OFF)
    assert written == [home / ".claude.json", wt / ".claude" / "settings.local.json"]
    assert local_settings(wt) == {"attribution": {"commit": "", "pr": ""}}
    assert seed_workspace(wt, home=home, choices=OFF) == []  # idempotent


def test_attribution_back_on_removes_only_labs_own_off(home, wt):
    seed_workspace(wt, home=home, choices=OFF)
    seed_workspace(wt, home=home)
    assert local_settings(wt) == {}


def test_an_operators_own_attribution_text_is_kept_when_attribution_is_on(home, wt):
    (wt / ".claude").mkdir()
    mine = {"attribution": {"commit": "Reviewed-by: me"}, "permissions": {"allow": ["Bash(ls)"]}}
    (wt / ".claude" / "settings.local.json").write_text(json.dumps(mine))
    assert seed_workspace(wt, home=home, choices=WorkspaceChoices()) == [home / ".claude.json"]
    assert local_settings(wt) == mine
    seed_workspace(wt, home=home, choices=OFF)
    # Off wins for the two texts; every other key is kept, and nothing else lands in the tree.
    assert local_settings(wt) == {"attribution": {"commit": "", "pr": ""}, "permissions": mine["permissions"]}
    assert sorted(p.name for p in (wt / ".claude").iterdir()) == ["settings.local.json"]


@pytest.mark.parametrize(
    ("policy", "listed", "other"),
    [
        (ProjectServers.REJECT, "disabledMcpjsonServers", "enabledMcpjsonServers"),
        (ProjectServers.APPROVE, "enabledMcpjsonServers", "disabledMcpjsonServers"),
    ],
)
def test_the_repositorys_mcp_servers_are_listed_by_name(home, wt, policy, listed, other):
    mcp_json(wt, "search", "db")
    (wt / ".claude").mkdir()
    (wt / ".claude" / "settings.local.json").write_text(json.dumps({other: ["db", "kept"]}))
    seed_workspace(wt, home=home, choices=WorkspaceChoices(project_servers=policy))
    assert local_settings(wt) == {listed: ["db", "search"], other: ["kept"]}
    assert seed_workspace(wt, home=home, choices=WorkspaceChoices(project_servers=policy)) == []


def test_an_unreadable_mcp_json_is_left_to_the_cli(home, wt):
    (wt / ".mcp.json").write_text("{not json")
    assert seed_workspace(wt, home=home) == [home / ".claude.json"]
    assert not (wt / ".claude").exists()


def test_a_fifo_as_mcp_json_or_the_cli_config_is_never_waited_on(home, wt):
    os.mkfifo(wt / ".mcp.json")
    assert returns_within(lambda: seed_workspace(wt, home=home)) == [home / ".claude.json"]
    (home / ".claude.json").unlink()
    os.mkfifo(home / ".claude.json")
    with pytest.raises(ConfigRefused, match="is a FIFO"):
        returns_within(lambda: seed_workspace(wt, home=home))


def test_a_tracked_settings_file_is_never_edited(home, tmp_path):
    import subprocess

    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / ".claude" / "settings.local.json").write_text("{}\n")
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "1"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    with pytest.raises(ConfigRefused, match="tracked by the repository"):
        seed_workspace(repo, home=home, choices=OFF)
    assert (repo / ".claude" / "settings.local.json").read_text() == "{}\n"


@pytest.mark.parametrize("what", ["dir", "file"])
def test_a_symlinked_settings_path_is_refused(home, wt, tmp_path, what):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "settings.local.json").write_text("{}")
    if what == "dir":
        (wt / ".claude").symlink_to(elsewhere)
    else:
        (wt / ".claude").mkdir()
        (wt / ".claude" / "settings.local.json").symlink_to(elsewhere / "settings.local.json")
    with pytest.raises(ConfigRefused, match="symlink"):
        seed_workspace(wt, home=home, choices=OFF)
    assert (elsewhere / "settings.local.json").read_text() == "{}"


# --- the first-run state (COMPAT-seeding §7) --------------------------------------------------

KEY = "sk-ant-api03-" + "x" * 40 + "0123456789abcdefWXYZ"


def test_a_fresh_home_gets_onboarding_done_and_only_the_given_key_approved(home, wt):
    seed_workspace(wt, home=home, api_key=KEY)
    state = config(home)
    assert state["hasCompletedOnboarding"] is True
    # The CLI stores the key's last 20 characters, never the key.
    assert state["customApiKeyResponses"] == {"approved": [KEY[-20:]], "rejected": []}
    assert KEY not in (home / ".claude.json").read_text()


def test_no_key_configured_approves_nothing(home, wt):
    seed_workspace(wt, home=home)
    assert "customApiKeyResponses" not in config(home)


def test_the_key_replaces_an_earlier_no_and_keeps_other_answers(home, wt):
    earlier = {"approved": ["other-approved-tail1"], "rejected": [KEY[-20:], "other-rejected-tail1"]}
    (home / ".claude.json").write_text(json.dumps({"customApiKeyResponses": earlier}))
    seed_workspace(wt, home=home, api_key=KEY)
    assert config(home)["customApiKeyResponses"] == {
        "approved": ["other-approved-tail1", KEY[-20:]],
        "rejected": ["other-rejected-tail1"],
    }
    assert seed_workspace(wt, home=home, api_key=KEY) == []  # idempotent


def test_malformed_key_responses_are_refused_not_rewritten(home, wt):
    (home / ".claude.json").write_text(json.dumps({"customApiKeyResponses": {"approved": "abc"}}))
    with pytest.raises(ConfigRefused):
        seed_workspace(wt, home=home, api_key=KEY)
    assert config(home) == {"customApiKeyResponses": {"approved": "abc"}}


def test_the_provider_approves_only_the_key_lab_passes(settings, home, wt, monkeypatch):
    from providers.claude_code.provider import ClaudeCodeProvider

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-labs-own-environment-0000")
    settings.LAB_AGENT_HOME = str(home)
    settings.LAB_AGENT_ENV = {}
    ClaudeCodeProvider().seed_workspace(wt)
    assert "customApiKeyResponses" not in config(home)
    settings.LAB_AGENT_ENV = {"ANTHROPIC_API_KEY": KEY}
    ClaudeCodeProvider().seed_workspace(wt)
    assert config(home)["customApiKeyResponses"]["approved"] == [KEY[-20:]]


def test_a_linked_worktree_is_trusted_alone_and_the_repository_only_on_the_operators_word(home, tmp_path):
    """COMPAT-seeding §7, §8: seeding trusts the worktree's folder (its prompt would hold the
    run); the repository, whose settings would then load, only through trust_repository."""
    import subprocess

    repo = tmp_path / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo, check=True)
    subprocess.run(
        [*git, "worktree", "add", "-q", "-b", "run", str(tmp_path / "linked")], cwd=repo, check=True
    )
    seed_workspace(tmp_path / "linked", home=home)
    assert config(home)["projects"] == {str((tmp_path / "linked").resolve()): TRUST}
    assert not repository_trusted(tmp_path / "linked", home=home)

    assert home / ".claude.json" in trust_repository(tmp_path / "linked", home=home)
    projects = config(home)["projects"]
    assert projects == {str((tmp_path / "linked").resolve()): TRUST, str(repo.resolve()): TRUST}
    assert repository_trusted(repo, home=home) and repository_trusted(tmp_path / "linked", home=home)
    assert trust_repository(repo, home=home) == []  # idempotent
