"""Case 17: lab is SIGKILLed in the middle of a file it writes — the secret key (lab/settings.py),
the CLI config seed_workspace grants trust in (~/.claude.json, providers/claude_code/seed.py), the
hook spool (providers/hook_writer.py). Each writer runs in a loop in a subprocess that
is killed at random points; the file is then old or new, never torn."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("LAB_TORN_KILLS", "8"))


def _kill_loop(code: str, env: dict[str, str], check, *, kills: int = KILLS, max_delay: float = 0.08) -> None:
    """Start `code` (it prints "ready" then writes forever), SIGKILL it after a random delay,
    run `check()`, `kills` times."""
    rng = random.Random(int.from_bytes(os.urandom(4)))
    for _ in range(kills):
        proc = subprocess.Popen(
            [sys.executable, "-c", code], cwd=REPO, env={**os.environ, **env},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == b"ready", proc.stderr.read() if proc.stderr else line
        import time

        time.sleep(rng.uniform(0, max_delay))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL, (
            "the writer died on its own: " + proc.stderr.read().decode()
        )
        check()


def test_the_secret_key_file_is_never_torn(tmp_path):
    from lab.settings import _check_secret_key, _generated_secret_key

    key = tmp_path / "keys" / "secret_key"
    key.parent.mkdir()
    import inspect

    # The function's own source, without importing all of lab.settings per kill (seconds each).
    source = inspect.getsource(_generated_secret_key)
    code = f"""
import os, secrets, sys
from pathlib import Path
{source}
path = Path({str(key)!r})
print("ready", flush=True)
while True:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    _generated_secret_key(path)
"""

    def check() -> None:
        if key.exists():  # absent is the harness's own unlink: lab generates one on start
            _check_secret_key(key.read_text().strip())
            assert key.stat().st_mode & 0o077 == 0

    _kill_loop(
        code, {"LAB_DATA_DIR": str(tmp_path / "data"), "DJANGO_SETTINGS_MODULE": "lab.settings"}, check
    )
    # Whatever was left (a key, or a temp file beside none), the next start gets a usable key.
    _check_secret_key(_generated_secret_key(key))


def test_the_cli_config_seed_workspace_writes_is_never_torn(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    original = {
        "numStartups": 7,
        "oauthAccount": {"emailAddress": "op@example.invalid"},
        "projects": {f"/existing/{i}": {"allowedTools": ["x" * 200]} for i in range(4000)},  # ~1 MB
    }
    config = home / ".claude.json"
    config.write_text(json.dumps(original))
    # seed.py loaded by path: the package __init__ would import the adapter and Django per kill.
    code = f"""
import importlib.util, itertools, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("seed", {str(REPO / "providers/claude_code/seed.py")!r})
seed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seed)
seed_workspace = seed.seed_workspace
home = Path({str(home)!r})
print("ready", flush=True)
for i in itertools.count():
    seed_workspace(Path(f"/tmp/lab-torn-wt-{{i}}"), home=home)
"""

    def check() -> None:
        state = json.loads(config.read_text())  # parses: never half a file
        assert isinstance(state, dict)
        assert state["numStartups"] == 7 and state["oauthAccount"] == original["oauthAccount"]
        for key, value in original["projects"].items():
            assert state["projects"][key] == value  # nothing the CLI had is lost
        backup = home / ".claude.json.lab-backup"
        if backup.exists():
            assert json.loads(backup.read_text()) == original

    _kill_loop(code, {"DJANGO_SETTINGS_MODULE": "lab.settings", "LAB_DATA_DIR": str(tmp_path / "d")}, check)


def test_hook_writer_files_are_never_torn(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_input": {"blob": "y" * 256 * 1024}}).encode()
    code = f"""
import io, sys
sys.path.insert(0, {str(REPO / "providers")!r})
import hook_writer
import json
payload = json.dumps({{"hook_event_name": "PreToolUse", "tool_input": {{"blob": "y" * 256 * 1024}}}}).encode()
print("ready", flush=True)
while True:
    sys.stdin = io.TextIOWrapper(io.BytesIO(payload))
    hook_writer.main(["hook_writer.py", {str(spool)!r}])
"""

    whole = 0

    def check() -> None:
        nonlocal whole
        from providers.hookspool import spool_events

        names = [n for n in os.listdir(spool) if n.endswith(".json") and not n.startswith(".")]
        assert len(spool_events(str(spool))) == len(names)  # the reader sees exactly the whole ones
        for name in names:
            assert (spool / name).read_bytes() == payload, name
            (spool / name).unlink()  # checked: keep the next round's listing small
        whole += len(names)

    _kill_loop(code, {}, check, max_delay=0.15)
    assert whole, "the writer never finished a file"


def test_a_short_write_never_lands_in_the_spool(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "providers"))
    try:
        import hook_writer
    finally:
        sys.path.pop(0)
    import io

    spool = tmp_path / "spool"
    spool.mkdir()
    payload = json.dumps({"hook_event_name": "Stop", "pad": "z" * 10000}).encode()
    real_write = os.write
    monkeypatch.setattr(hook_writer.os, "write", lambda fd, data: real_write(fd, bytes(data)[:4096]))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload)))
    hook_writer.main(["hook_writer.py", str(spool)])
    (name,) = [n for n in os.listdir(spool) if not n.startswith(".")]
    assert (spool / name).read_bytes() == payload
