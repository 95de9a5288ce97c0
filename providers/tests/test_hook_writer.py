"""The one hook writer, and the old hook commands that runs started by an earlier lab still run:
their CLIs outlive a restart of lab and keep the command they started with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from providers.hookspool import spool_events

ROOT = Path(__file__).resolve().parents[2]


def run_hook(argv: list[str], payload: dict, env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-S", *argv],
        input=json.dumps(payload).encode(),
        env={"PATH": os.environ.get("PATH", ""), **env},
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0 and done.stderr == b""


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["providers/hook_writer.py", "{spool}"], {}),
        (["providers/hook_writer.py"], {"LAB_HOOK_SPOOL": "{spool}"}),
        # Claude Code runs of an earlier lab: the spool dir as the argument of the old script.
        (["providers/claude_code/hook_spool.py", "{spool}"], {}),
        # Codex runs of an earlier lab: the old script, the spool in the old variable.
        (["providers/codex/hook_spool.py"], {"LAB_CODEX_SPOOL": "{spool}"}),
    ],
    ids=["argument", "environment", "claude-code-before", "codex-before"],
)
def test_every_hook_command_lab_ever_installed_writes_the_payload_into_the_spool(tmp_path, argv, env) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    fill = {"spool": str(spool)}
    argv = [str(ROOT / a.format(**fill)) if a.startswith("providers/") else a.format(**fill) for a in argv]
    run_hook(argv, {"hook_event_name": "SessionStart", "n": 1}, {k: v.format(**fill) for k, v in env.items()})
    events = spool_events(str(spool))
    assert [(e["hook_event_name"], e["n"]) for e in events] == [("SessionStart", 1)]


def test_without_a_spool_the_writer_records_nothing_and_never_fails(tmp_path) -> None:
    run_hook([str(ROOT / "providers" / "hook_writer.py")], {"hook_event_name": "Stop"}, {})
    run_hook([str(ROOT / "providers" / "codex" / "hook_spool.py")], {"hook_event_name": "Stop"}, {})
