import json, time, os
import pytest
from compat.adapter import spawn_adapter_run
from compat.scripted_model import tool_use, text, when, plan_turns
from providers.tmux import Tmux
from providers.claude_code.spool import spool_events
from compat.tests.test_zz_probe19 import adapter_settings, wait_perm

pytestmark = pytest.mark.live
OUT = "/tmp/p19"

def idle(run):
    d = time.monotonic() + 20
    while time.monotonic() < d:
        run.refresh()
        if run.last and run.last.state == "idle":
            return
        time.sleep(0.2)

def cap(tm, run):
    return "\n".join(l for l in tm.capture(run.handle.tmux_session).splitlines() if l.strip() and "╌╌╌" not in l and "───" not in l)

def test_probe_bash_shapes(adapter_settings, claude_home, tmp_path, scripted_model):
    (claude_home.worktree / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    wt = str(claude_home.worktree)
    m = scripted_model
    cmds = {"B1": "echo hi > out.txt", "B2": "python3 -c 'print(1)'", "B3": "rm notes.txt", "B4": "npm test", "B5": "touch made.txt", "B6": "touch made.txt", "B7": "ls /etc"}
    for k, c in cmds.items():
        m.script.add(when(k, tool_use("Bash", {"command": c, "description": f"run {k}"}), text(f"{k} done")))
    run = spawn_adapter_run(tmp_path, claude_home.worktree, {"permission_mode": "default"})
    tm = Tmux(run.handle.tmux_socket)
    s = run.handle.tmux_session
    log = open(f"{OUT}/bash.txt", "w")
    n = 0
    try:
        for k in ["B1", "B2", "B3", "B4", "B7"]:
            run.provider.reply(run.handle, f"{k} go")
            n += 1
            try:
                ev = wait_perm(run, n, timeout=20)
            except AssertionError:
                log.write(f"===== {k} NO PROMPT\n{cap(tm, run)}\n"); n -= 1; idle(run); continue
            time.sleep(1.5)
            log.write(f"===== {k} {json.dumps(ev.get('permission_suggestions'))}\n{cap(tm, run)}\n")
            if k == "B1":
                for key in ["Down", "Down", "Down"]:
                    tm.send_keys(s, key); time.sleep(0.3)
                tm.send_keys(s, "Tab"); time.sleep(1.0)
                log.write(f"----- B1 after Down3 Tab\n{cap(tm, run)}\n")
                tm.paste(s, "use printf instead"); time.sleep(0.5)
                log.write(f"----- B1 after typing\n{cap(tm, run)}\n")
                tm.send_keys(s, "Enter"); time.sleep(2)
                log.write(f"----- B1 after Enter\n{cap(tm, run)}\n")
            else:
                tm.send_keys(s, "Escape"); time.sleep(1)
            log.flush(); idle(run); time.sleep(0.5)
        # always-allow on B5, then B6 identical
        run.provider.reply(run.handle, "B5 go"); n += 1
        ev = wait_perm(run, n); time.sleep(1.5)
        log.write(f"===== B5 {json.dumps(ev.get('permission_suggestions'))}\n{cap(tm, run)}\n")
        tm.send_keys(s, "Down"); time.sleep(0.3); tm.send_keys(s, "Enter"); time.sleep(2)
        idle(run); time.sleep(0.5)
        log.write(f"----- after B5 row2\n{cap(tm, run)}\n")
        run.provider.reply(run.handle, "B6 go")
        time.sleep(6)
        log.write(f"----- B6\n{cap(tm, run)}\n")
        log.write("===== local settings\n")
        for p in [claude_home.worktree / ".claude" / "settings.local.json", claude_home.home / ".claude" / "settings.json", claude_home.home / ".claude.json"]:
            if p.exists(): log.write(f"{p}: {p.read_text()[:3000]}\n")
        log.write("===== transcript\n" + open(run.provider.locate_transcript(run.handle)).read())
    finally:
        log.close()
        tm.kill_server()

def test_probe_edit_feedback(adapter_settings, claude_home, tmp_path, scripted_model):
    (claude_home.worktree / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    wt = str(claude_home.worktree)
    m = scripted_model
    m.script.add(when("W1", tool_use("Write", {"file_path": wt + "/new.txt", "content": "hello\n"}), text("w1 done")))
    m.script.add(when("W2", tool_use("Write", {"file_path": wt + "/new2.txt", "content": "hello\n"}), text("w2 done")))
    m.script.add(when("W3", tool_use("Edit", {"file_path": wt + "/notes.txt", "old_string": "beta", "new_string": "BETA"}), text("w3 done")))
    run = spawn_adapter_run(tmp_path, claude_home.worktree, {"permission_mode": "default"})
    tm = Tmux(run.handle.tmux_socket)
    s = run.handle.tmux_session
    log = open(f"{OUT}/write.txt", "w")
    try:
        run.provider.reply(run.handle, "W1 go")
        wait_perm(run, 1); time.sleep(1.5)
        tm.send_keys(s, "Down"); time.sleep(0.3); tm.send_keys(s, "Down"); time.sleep(0.3); tm.send_keys(s, "Tab"); time.sleep(1)
        log.write(f"----- W1 after Down2 Tab\n{cap(tm, run)}\n")
        tm.paste(s, "call it other.txt"); time.sleep(0.5); tm.send_keys(s, "Enter"); time.sleep(2)
        log.write(f"----- W1 after Enter\n{cap(tm, run)}\n")
        idle(run); time.sleep(0.5)
        run.provider.reply(run.handle, "W2 go")
        wait_perm(run, 2); time.sleep(1.5)
        tm.send_keys(s, "Down"); time.sleep(0.3); tm.send_keys(s, "Enter"); time.sleep(2)
        idle(run); time.sleep(0.5)
        log.write(f"----- W2 after row2\n{cap(tm, run)}\n")
        run.provider.reply(run.handle, "W3 go")
        time.sleep(6)
        log.write(f"----- W3\n{cap(tm, run)}\n")
        log.write("===== transcript\n" + open(run.provider.locate_transcript(run.handle)).read())
    finally:
        log.close()
        tm.kill_server()

PLAN = "# Plan\n\n1. Say hi.\n"
@pytest.mark.parametrize("row", [0, 1])
def test_probe_plan(adapter_settings, claude_home, tmp_path, scripted_model, row):
    scripted_model.script.add(when("PLAN1", plan_turns(PLAN, after="Approved.")))
    run = spawn_adapter_run(tmp_path, claude_home.worktree, {"permission_mode": "plan"})
    tm = Tmux(run.handle.tmux_socket)
    s = run.handle.tmux_session
    log = open(f"{OUT}/plan{row}.txt", "w")
    try:
        run.provider.reply(run.handle, "PLAN1 go")
        d = time.monotonic() + 60
        while time.monotonic() < d:
            if any(e.get("hook_event_name") == "PermissionRequest" and e.get("tool_name") == "ExitPlanMode" for e in spool_events(run.handle.spool_dir)):
                break
            time.sleep(0.1)
        time.sleep(1.5)
        log.write(f"----- picker\n{cap(tm, run)}\n")
        for _ in range(row):
            tm.send_keys(s, "Down"); time.sleep(0.3)
        tm.send_keys(s, "Enter"); time.sleep(4)
        log.write(f"----- after\n{cap(tm, run)}\n")
        log.write("===== transcript\n" + open(run.provider.locate_transcript(run.handle)).read())
    finally:
        log.close()
        tm.kill_server()
