"""Claude Code's status line (compat §16): lab's statusLine writes each payload to the run's
status file and still draws the operator's own line; the payload's context and quota figures,
"not reported" kept apart from 0."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from providers import hook_writer
from providers.claude_code import ClaudeCodeProvider
from providers.claude_code.spool import usage_from_status
from providers.hookspool import spool_events
from providers.schema import Quota, RunHandle

# A payload the pinned CLI (2.1.332) sent with an API key, after one reply (trimmed: the keys
# lab reads, as captured).
API_KEY_PAYLOAD = {
    "session_id": "245493c5-0833-4144-8397-efaa4c7e772b",
    "version": "2.1.332",
    "cost": {"total_cost_usd": 0.0006, "total_duration_ms": 1716},
    "context_window": {
        "total_input_tokens": 100,
        "total_output_tokens": 10,
        "context_window_size": 1000000,
        "current_usage": {
            "input_tokens": 100,
            "output_tokens": 10,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
        "used_percentage": 0,
        "remaining_percentage": 100,
    },
    "exceeds_200k_tokens": False,
}
BEFORE_FIRST_REPLY = {
    "context_window": {
        "total_input_tokens": 0,
        "total_output_tokens": 0,
        "context_window_size": 1000000,
        "current_usage": None,
        "used_percentage": None,
        "remaining_percentage": None,
    },
    "rate_limits": None,
}


def test_an_api_key_reports_the_context_and_no_quota():
    usage = usage_from_status(API_KEY_PAYLOAD)
    assert (usage.context_tokens, usage.context_window, usage.context_percent) == (100, 1_000_000, 0)
    assert usage.turn_tokens == 110
    assert usage.quotas is None  # not reported, never "0 % used"


def test_before_the_first_reply_nothing_about_the_context_is_reported():
    usage = usage_from_status(BEFORE_FIRST_REPLY)
    assert (usage.context_tokens, usage.context_percent, usage.turn_tokens) == (None, None, None)
    assert usage.context_window == 1_000_000 and usage.quotas is None


def test_a_subscriptions_limits_are_read_with_their_reset():
    payload = {
        **API_KEY_PAYLOAD,
        "rate_limits": {
            "five_hour": {"used_percentage": 42.5, "resets_at": 1_800_000_000},
            "seven_day": {"used_percentage": 7, "resets_at": 1_800_300_000},
        },
    }
    assert usage_from_status(payload).quotas == (
        Quota("5-hour", 42.5, 1_800_000_000),
        Quota("7-day", 7.0, 1_800_300_000),
    )


def _handle(tmp_path: Path, *, trusted: bool = False) -> RunHandle:
    (tmp_path / "run" / "spool").mkdir(parents=True, exist_ok=True)
    (tmp_path / "wt").mkdir(exist_ok=True)
    return RunHandle(
        run_id=1,
        worktree=str(tmp_path / "wt"),
        tmux_socket="unused",
        tmux_session="unused",
        spool_dir=str(tmp_path / "run" / "spool"),
        trusted=trusted,
    )


def _run_status_line(command: str, payload: dict[str, object]) -> str:
    # As the CLI runs it: through a shell, the payload on stdin, its stdout drawn.
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=20,
        check=True,
    )
    return done.stdout.decode()


@pytest.fixture
def provider(settings, tmp_path):
    settings.LAB_AGENT_HOME = str(tmp_path / "home")
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    return ClaudeCodeProvider()


def test_the_status_line_records_the_payload_and_draws_nothing_of_its_own(provider, tmp_path):
    run = _handle(tmp_path)
    line = provider.status_settings(run)["statusLine"]
    assert _run_status_line(line["command"], API_KEY_PAYLOAD) == ""
    usage = provider.usage(run)
    assert usage is not None and usage.context_tokens == 100
    # In the spool (its write wakes the watcher), yet never read as a hook payload.
    assert [p.name for p in Path(run.spool_dir).iterdir()] == ["status.line"]
    assert spool_events(run.spool_dir) == []


def test_the_operators_own_status_line_still_draws(provider, tmp_path):
    own = tmp_path / "mine.sh"
    own.write_text('#!/bin/sh\nread -r x; echo "mine: $(echo "$x" | head -c 14)"\n')
    own.chmod(0o755)
    settings_file = tmp_path / "home" / ".claude" / "settings.json"
    settings_file.write_text(
        json.dumps({"statusLine": {"type": "command", "command": str(own), "padding": 2}})
    )
    run = _handle(tmp_path)
    line = provider.status_settings(run)["statusLine"]
    assert line["padding"] == 2
    assert _run_status_line(line["command"], {"session_id": "x"}) == 'mine: {"session_id":\n'
    assert provider.usage(run) is not None


def test_a_repositorys_status_line_is_used_only_when_its_settings_load(provider, tmp_path):
    wt = tmp_path / "wt"
    (wt / ".claude").mkdir(parents=True)
    (wt / ".claude" / "settings.json").write_text(
        json.dumps({"statusLine": {"type": "command", "command": "echo repo-line"}})
    )
    untrusted = provider.status_settings(_handle(tmp_path, trusted=False))["statusLine"]["command"]
    trusted = provider.status_settings(_handle(tmp_path, trusted=True))["statusLine"]["command"]
    assert "repo-line" not in untrusted and "repo-line" in trusted


def test_no_status_file_is_no_report(provider, tmp_path):
    assert provider.usage(_handle(tmp_path)) is None


def test_a_broken_status_file_is_no_report(provider, tmp_path):
    run = _handle(tmp_path)
    provider.status_file(run).write_text("{not json")
    assert provider.usage(run) is None


def test_the_writer_never_fails_the_cli(tmp_path):
    script = Path(hook_writer.__file__)
    missing = tmp_path / "gone" / "status.json"
    argv = [sys.executable, "-S", str(script), "--status", str(missing), "--", "/bin/false"]
    done = subprocess.run(shlex.split(shlex.join(argv)), input=b"{}", capture_output=True, timeout=20)
    assert done.returncode == 0 and done.stdout == b"" and not missing.exists()


def test_spawn_passes_the_status_line_with_the_hooks(settings, tmp_path, monkeypatch):
    from providers.tmux import Tmux

    settings.LAB_AGENT_HOME = str(tmp_path / "home")
    seen: list[dict[str, object]] = []
    monkeypatch.setattr(Tmux, "new_session", lambda self, name, **kw: seen.append(kw) or 1)
    run = _handle(tmp_path, trusted=True)
    ClaudeCodeProvider().spawn(run, {})
    argv = seen[0]["argv"]
    assert isinstance(argv, list)
    inline = orjson.loads(argv[argv.index("--settings") + 1])
    assert "--status" in inline["statusLine"]["command"] and "hooks" in inline


def _payload(used: int) -> bytes:
    return json.dumps(
        {
            **API_KEY_PAYLOAD,
            "context_window": {
                **API_KEY_PAYLOAD["context_window"],
                "total_input_tokens": used,
                "current_usage": {**API_KEY_PAYLOAD["context_window"]["current_usage"], "input_tokens": used},
            },
        }
    ).encode()


def test_the_figures_follow_every_rewrite_of_the_status_file(provider, tmp_path):
    run = _handle(tmp_path)
    line = provider.status_settings(run)["statusLine"]
    for used in (100, 200, 300):  # the writer renames each payload in, right after the last
        subprocess.run(shlex.split(line["command"]), input=_payload(used), capture_output=True, check=True)
        usage = provider.usage(run)
        assert usage is not None and usage.context_tokens == used


def test_a_settled_status_file_rewritten_in_place_in_the_same_tick_is_read_again(provider, tmp_path):
    run = _handle(tmp_path)
    path = provider.status_file(run)
    path.write_bytes(_payload(100))
    old = time.time_ns() - 10**9
    os.utime(path, ns=(old, old))  # settled: its usage is remembered
    assert provider.usage(run).context_tokens == 100
    # The same inode, size and mtime (a write within one timestamp tick): the change time moved.
    with open(path, "r+b") as f:
        f.write(_payload(200))
    os.utime(path, ns=(old, old))
    assert provider.usage(run).context_tokens == 200
