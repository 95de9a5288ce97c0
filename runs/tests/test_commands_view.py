"""runs.commands: the chat-safe command rows a run's composer offers, cached per worktree.

The view (GET /runs/<id>/commands) is the lead's to wire; these pin the selector it calls.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.cache import cache

from providers.schema import CommandRole, CommandSpec
from runs import commands
from runs.commands import CACHE_SECONDS, clear_command, run_commands


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def calls(fake_provider, monkeypatch) -> list[Path]:
    """Every worktree the provider was asked about, so a test sees when the cache answered."""
    seen: list[Path] = []
    original = fake_provider.commands

    def counting(worktree: Path) -> list[CommandSpec]:
        seen.append(worktree)
        return original(worktree)

    monkeypatch.setattr(fake_provider, "commands", counting)
    return seen


def test_it_returns_only_chat_safe_rows_in_the_providers_order(calls):
    rows = run_commands(provider_id="fake", worktree="/tmp/wt-a")
    assert [r.name for r in rows] == ["new", "echo"]  # "settings" opens a UI: filtered out
    assert all(r.chat_safe for r in rows)


def test_it_asks_the_provider_once_per_worktree_within_the_cache_window(calls):
    run_commands(provider_id="fake", worktree="/tmp/wt-a")
    run_commands(provider_id="fake", worktree="/tmp/wt-a")
    run_commands(provider_id="fake", worktree="/tmp/wt-b")
    assert calls == [Path("/tmp/wt-a"), Path("/tmp/wt-b")]


def test_it_caches_for_about_thirty_seconds(calls, monkeypatch):
    timeouts: list[object] = []
    real_set = cache.set
    monkeypatch.setattr(
        commands.cache,
        "set",
        lambda key, value, timeout: (timeouts.append(timeout), real_set(key, value, timeout)),
    )
    run_commands(provider_id="fake", worktree="/tmp/wt-a")
    assert timeouts == [CACHE_SECONDS] == [30]


def test_it_asks_again_once_the_entry_expires(calls):
    run_commands(provider_id="fake", worktree="/tmp/wt-a")
    cache.clear()  # what the 30 s expiry does
    run_commands(provider_id="fake", worktree="/tmp/wt-a")
    assert len(calls) == 2


def test_the_cache_key_is_safe_for_any_worktree_path(calls):
    odd = "/tmp/" + "very long name with spaces and ünïcode:" * 20
    assert [r.name for r in run_commands(provider_id="fake", worktree=odd)] == ["new", "echo"]
    assert len(commands._cache_key("fake", odd)) < 64


def test_a_run_without_a_worktree_is_refused(calls):
    with pytest.raises(ValueError):
        run_commands(provider_id="fake", worktree="")
    assert calls == []


def test_clear_command_finds_the_row_the_provider_marks_clear(calls):
    row = clear_command(run_commands(provider_id="fake", worktree="/tmp/wt-a"))
    assert row is not None and (row.name, row.role) == ("new", CommandRole.CLEAR)
    assert clear_command([CommandSpec(name="x")]) is None


def test_the_real_adapter_through_the_registry(settings, tmp_path):
    # Generic code names the provider only by id; the adapter does the rest.
    settings.LAB_PROVIDERS = {"claude-code": "providers.claude_code.ClaudeCodeProvider"}
    settings.LAB_AGENT_HOME = str(tmp_path / "home")
    from providers import registry

    registry._load.cache_clear()
    cmd = tmp_path / "wt" / ".claude" / "commands" / "probe-cmd.md"
    cmd.parent.mkdir(parents=True)
    cmd.write_text("---\ndescription: Probe project command description\nargument-hint: [file]\n---\nbody\n")
    rows = run_commands(provider_id="claude-code", worktree=str(tmp_path / "wt"))
    names = [r.name for r in rows]
    assert "probe-cmd" in names and "context" in names
    assert "config" not in names and "model" not in names and "exit" not in names
    assert clear_command(rows) is not None
    assert len(names) == len(set(names))


# --- the view and the New conversation button ---------------------------------------------

from providers.testing import fake_append  # noqa: E402
from runs import services  # noqa: E402


@pytest.fixture
def fake_run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/commands-view")


def test_the_view_serves_chat_safe_rows_as_json(authed_client, fake_run):
    response = authed_client.get(f"/runs/{fake_run.pk}/commands/", HTTP_ACCEPT="application/json")
    names = [row["name"] for row in response.json()["commands"]]
    assert "echo" in names and "new" in names
    assert "settings" not in names  # chat_safe=False: opens a UI lab cannot see


def test_the_view_serves_an_html_partial_for_htmx(authed_client, fake_run):
    body = authed_client.get(f"/runs/{fake_run.pk}/commands/").content.decode()
    assert 'data-name="echo"' in body and 'data-hint="TEXT"' in body
    assert 'data-role="clear"' in body


def test_new_conversation_is_bound_to_the_providers_clear_command(authed_client, fake_run, fake_provider):
    body = authed_client.get(f"/runs/{fake_run.pk}/").content.decode()
    assert 'class="inline new-conversation"' in body
    assert 'name="text" value="/new"' in body  # the fake's CLEAR-role row, not a name lab knows
    authed_client.post(f"/runs/{fake_run.pk}/reply/", {"text": "/new"})
    assert fake_provider.sent[-1] == ("reply", "/new")


def test_an_ended_run_offers_no_new_conversation(authed_client, fake_run):
    services.run_end(run=fake_run)
    fake_append(fake_run.transcript_path, kind="assistant_text", text="still readable")
    body = authed_client.get(f"/runs/{fake_run.pk}/").content.decode()
    assert "new-conversation" not in body and "still readable" in body


def menu(authed_client, run, typed: str) -> tuple[bool, list[str]]:
    """(open, the names its rows offer, in order) as the composer's menu answers `typed`."""
    body = authed_client.get(f"/runs/{run.pk}/commands/", {"text": typed}).content.decode()
    opening = re.search(r'<div id="command-menu"[^>]*>', body)
    assert opening, body
    return " hidden" not in opening.group(0), re.findall(r'<div role="option"[^>]*data-name="([^"]*)"', body)


def test_the_menu_offers_the_commands_the_typed_word_names_starting_ones_first(authed_client, fake_run):
    assert menu(authed_client, fake_run, "/e") == (True, ["echo", "new"])  # "echo" starts with e
    assert menu(authed_client, fake_run, "/ECH") == (True, ["echo"])
    body = authed_client.get(f"/runs/{fake_run.pk}/commands/", {"text": "/"}).content.decode()
    assert body.count('aria-selected="true"') == 1 and 'aria-selected="true" data-name="new"' in body


def test_the_menu_is_closed_for_anything_but_a_command_word_alone(authed_client, fake_run):
    for typed in ("/echo some words", "hello", "/e\nmore", "/zzz"):
        assert menu(authed_client, fake_run, typed) == (False, []), typed


def test_the_composer_starts_with_the_menu_closed(authed_client, fake_run):
    body = authed_client.get(f"/runs/{fake_run.pk}/").content.decode()
    assert (
        '<div id="command-menu" class="command-menu" role="listbox" aria-label="Commands" hidden></div>'
        in body
    )
