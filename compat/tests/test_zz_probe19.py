import json, time, os
import pytest
from compat.adapter import spawn_adapter_run
from compat.scripted_model import tool_use, text, when, plan_turns
from providers.tmux import Tmux
from providers.claude_code.spool import spool_events

pytestmark = pytest.mark.live
OUT = "/tmp/p19"

@pytest.fixture
def adapter_settings(settings, claude_home):
    env = {k: v for k, v in claude_home.env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
    settings.LAB_AGENT_HOME = str(claude_home.home)
    settings.LAB_AGENT_ENV = env
    return settings

def wait_perm(run, n, timeout=40):
    d = time.monotonic() + timeout
    while time.monotonic() < d:
        ev = [e for e in spool_events(run.handle.spool_dir) if e.get("hook_event_name") == "PermissionRequest"]
        if len(ev) >= n:
            return ev[n-1]
        time.sleep(0.05)
    raise AssertionError("no perm")

def test_probe_tools(adapter_settings, claude_home, tmp_path, scripted_model):
    (claude_home.worktree / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    wt = str(claude_home.worktree)
    m = scripted_model
    m.script.add(when("P1", tool_use("Bash", {"command": "touch made-by-bash.txt", "description": "Create a file"}), text("bash done")))
    m.script.add(when("P2", tool_use("Write", {"file_path": wt + "/new.txt", "content": "hello\nworld\n"}), text("write done")))
    m.script.add(when("P3", tool_use("Edit", {"file_path": wt + "/notes.txt", "old_string": "beta", "new_string": "BETA"}), text("edit done")))
    m.script.add(when("P4", tool_use("WebFetch", {"url": "https://example.com/", "prompt": "summarize"}), text("fetch done")))
    m.script.add(when("P5", tool_use("Bash", {"command": "git status", "description": "Show status"}), text("git done")))
    run = spawn_adapter_run(tmp_path, claude_home.worktree, {"permission_mode": "default"})
    tm = Tmux(run.handle.tmux_socket)
    log = open(f"{OUT}/tools.txt", "w")
    try:
        for i, p in enumerate(["P1", "P2", "P3", "P4", "P5"], 1):
            run.provider.reply(run.handle, f"{p} go")
            ev = wait_perm(run, i)
            time.sleep(1.5)
            log.write(f"===== {p} PermissionRequest\n{json.dumps(ev, indent=1)}\n----- pane\n{tm.capture(run.handle.tmux_session)}\n")
            if p == "P1":
                tm.send_keys(run.handle.tmux_session, "Tab"); time.sleep(1.0)
                log.write(f"----- after Tab\n{tm.capture(run.handle.tmux_session)}\n")
                tm.send_keys(run.handle.tmux_session, "Escape"); time.sleep(1.0)
                log.write(f"----- after Esc\n{tm.capture(run.handle.tmux_session)}\n")
            else:
                tm.send_keys(run.handle.tmux_session, "Escape"); time.sleep(1.5)
            log.flush()
            d = time.monotonic() + 20
            while time.monotonic() < d:
                run.refresh()
                if run.last and run.last.state == "idle":
                    break
                time.sleep(0.2)
            time.sleep(0.5)
        log.write("===== spool\n" + "\n".join(json.dumps(e) for e in spool_events(run.handle.spool_dir)) + "\n")
        log.write("===== transcript\n" + open(run.provider.locate_transcript(run.handle)).read())
    finally:
        log.close()
        tm.kill_server()
