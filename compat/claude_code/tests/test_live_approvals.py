"""Live: tool-permission prompts (manual mode) answered through the production path.

The dialog comes from the adapter (the PermissionRequest hook paired with its PreToolUse), the
answer goes through ClaudeCodeProvider.answer_dialog with the pinned approval recipes, and the
assertion is on the worktree (the file exists or not) and on what the CLI recorded: the
tool_result, the next prompt's permission mode, a second identical call running without a
prompt. COMPAT-dialogs.md §7 "Approvals" names these tests.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from compat.adapter import AdapterRun
from compat.claude_code.adapter import backstop_warnings, recorded, spawn_adapter_run
from compat.claude_code.scripted_model import Turn, text, tool_use, when
from providers.claude_code.dialogs import stored_rule
from providers.errors import PromptPending, StaleDialog
from providers.hookspool import spool_events
from providers.schema import Answer, Dialog, DialogKind, MessageKind, RunState
from providers.tmux import Tmux

pytestmark = pytest.mark.live


def raise_approval(run: AdapterRun, prompt: str, timeout: float = 60.0) -> Dialog:
    run.provider.reply(run.handle, prompt)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dialog = run.provider.pending_dialog(run.handle)
        if dialog is not None:
            assert dialog.kind == DialogKind.APPROVAL, dialog
            return dialog
        time.sleep(0.05)
    raise AssertionError(f"no approval appeared: {run.messages[-6:]!r}\n{run.pane()}")


def option(dialog: Dialog, label: str) -> int:
    labels = [o.label for o in dialog.options]
    if label in labels:
        return labels.index(label)
    return next(i for i, lab in enumerate(labels) if lab.startswith(label))


def answer(run: AdapterRun, prompt: str, label: str, feedback: str = "") -> tuple[Dialog, dict[str, Any]]:
    dialog = raise_approval(run, prompt)
    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(option(dialog, label),), text=feedback)])
    return dialog, recorded(run, dialog.tool_use_id)


def result_text(entry: dict[str, Any]) -> str:
    block = next(b for b in entry["message"]["content"] if b.get("type") == "tool_result")
    content = block.get("content")
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)


def settle(run: AdapterRun, after: str) -> None:
    run.wait(
        lambda r: after in r.texts(MessageKind.ASSISTANT_TEXT) and r.last.state == RunState.IDLE,
        timeout=30,
        what=f"the turn after the answer ({after})",
    )


def permission_requests(run: AdapterRun) -> list[dict[str, Any]]:
    return [e for e in spool_events(run.handle.spool_dir) if e.get("hook_event_name") == "PermissionRequest"]


def next_prompt_mode(run: AdapterRun, prompt: str) -> str:
    """The permission mode the CLI records on the next prompt (its user entry's permissionMode)."""
    run.provider.reply(run.handle, prompt)
    run.wait(lambda r: prompt in r.texts(MessageKind.USER_TEXT), timeout=30, what="the next prompt")
    for line in reversed(Path(run.provider.locate_transcript(run.handle)).read_text().splitlines()):
        if f'"content":"{prompt}"' in line and '"permissionMode"' in line:
            return json.loads(line)["permissionMode"]
    raise AssertionError("the next prompt carries no permissionMode")


def bash(command: str, description: str = "Run it") -> Any:
    return tool_use("Bash", {"command": command, "description": description})


REJECTED = "The user doesn't want to proceed with this tool use."


def test_bash_allowed_runs_and_denied_does_not(scripted_model, manual_run, claude_home):
    wt = claude_home.worktree
    scripted_model.script.add(when("BASH-A", bash("touch allowed.txt", "Create a file"), text("a done")))
    scripted_model.script.add(when("BASH-D", bash("touch denied.txt"), text("d done")))
    dialog, entry = answer(manual_run, "BASH-A go", "Allow once")
    assert dialog.header == "Bash" and dialog.body == "touch allowed.txt" and "Create a file" in dialog.prompt
    assert (wt / "allowed.txt").exists() and not result_text(entry).startswith(REJECTED)
    settle(manual_run, "a done")
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []
    dialog, entry = answer(manual_run, "BASH-D go", "Deny")
    assert result_text(entry).startswith(REJECTED) and not (wt / "denied.txt").exists()
    manual_run.wait(lambda r: r.last.state == RunState.IDLE, timeout=20, what="idle after the denial")
    assert manual_run.provider.pending_dialog(manual_run.handle) is None
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


def test_bash_denied_with_feedback_tells_claude(scripted_model, manual_run, claude_home):
    scripted_model.script.add(when("BASH-F", bash("touch nope.txt"), text("f done")))
    dialog, entry = answer(manual_run, "BASH-F go", "Deny, and tell Claude", feedback="use printf instead")
    assert result_text(entry).startswith(REJECTED) and result_text(entry).endswith("use printf instead")
    assert not (claude_home.worktree / "nope.txt").exists()
    settle(manual_run, "f done")  # the model is called again with the feedback
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


def test_bash_dont_ask_again_lets_the_identical_call_run_without_a_prompt(
    scripted_model, trusted_manual_run, claude_home
):
    manual_run = trusted_manual_run
    wt = claude_home.worktree
    command = "python3 -c \"open('ruled.txt', 'a').write('x')\""
    scripted_model.script.add(when("RULE-1", bash(command), text("r1 done")))
    scripted_model.script.add(when("RULE-2", bash(command), text("r2 done")))
    dialog, _ = answer(manual_run, "RULE-1 go", "Allow, and don't ask again")
    (asked_for,) = permission_requests(manual_run)
    rule = asked_for["permission_suggestions"][0]["rules"][0]["ruleContent"]
    assert f"“{stored_rule(rule)}”" in dialog.options[1].label  # the rule the TUI saves for it
    settle(manual_run, "r1 done")
    assert (wt / "ruled.txt").read_text() == "x"
    asked = len(permission_requests(manual_run))
    manual_run.provider.reply(manual_run.handle, "RULE-2 go")
    settle(manual_run, "r2 done")
    assert (wt / "ruled.txt").read_text() == "xx"  # it ran a second time …
    assert len(permission_requests(manual_run)) == asked  # … without a permission prompt
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


def test_an_untrusted_run_does_not_offer_dont_ask_again(scripted_model, manual_run, claude_home):
    """The rule would be saved in the repository's local settings, which an untrusted run does
    not load (COMPAT-seeding §8): the same call asks again. Seen live: with the row offered, the
    test above failed in an untrusted run."""
    command = "python3 -c \"open('ruled.txt', 'a').write('x')\""
    scripted_model.script.add(when("NORULE-1", bash(command), text("n1 done")))
    dialog, _ = answer(manual_run, "NORULE-1 go", "Allow once")
    assert [o.label for o in dialog.options if "don't ask again" in o.label] == []
    settle(manual_run, "n1 done")


def test_dont_ask_again_names_the_rule_the_cli_saves_and_where(
    scripted_model, adapter_settings, claude_home, tmp_path
):
    # The hook's suggestion names the exact command; the TUI saves "python3 *", and from a
    # linked worktree it writes the main checkout's local settings (compat §7).
    main = claude_home.worktree
    linked = tmp_path / "linked"
    subprocess.run(["git", "worktree", "add", "-q", "-b", "lab/linked", str(linked)], cwd=main, check=True)
    run = spawn_adapter_run(tmp_path / "linked-run", linked, {"permission_mode": "default"}, trusted=True)
    try:
        command = "python3 -c \"open('ruled.txt', 'a').write('x')\""
        scripted_model.script.add(when("WIDE-1", bash(command), text("w1 done")))
        dialog, _ = answer(run, "WIDE-1 go", "Allow, and don't ask again")
        (asked_for,) = permission_requests(run)
        assert asked_for["permission_suggestions"][0]["rules"][0]["ruleContent"] == command
        settle(run, "w1 done")
        saved = json.loads((main / ".claude" / "settings.local.json").read_text())["permissions"]["allow"]
        assert saved == ["Bash(python3 *)"] and not (linked / ".claude" / "settings.local.json").exists()
        assert dialog.options[1].label == "Allow, and don't ask again for “python3 *”"
        assert "Bash(python3 *) in the repository's .claude/settings.local.json (in its main checkout)" in (
            dialog.options[1].description
        )
    finally:
        Tmux(run.handle.tmux_socket).kill_server()


def test_write_allowed_creates_the_file_and_denied_does_not(scripted_model, manual_run, claude_home):
    wt = claude_home.worktree
    new = {"file_path": str(wt / "new.txt"), "content": "hello\nworld\n"}
    scripted_model.script.add(when("WRITE-A", tool_use("Write", new), text("w done")))
    other = {"file_path": str(wt / "other.txt"), "content": "no\n"}
    scripted_model.script.add(when("WRITE-D", tool_use("Write", other), text("wd done")))
    dialog, _ = answer(manual_run, "WRITE-A go", "Allow once")
    assert dialog.header == "Write" and dialog.body == "hello\nworld\n" and "new.txt" in dialog.prompt
    settle(manual_run, "w done")
    assert (wt / "new.txt").read_text() == "hello\nworld\n"
    dialog, entry = answer(manual_run, "WRITE-D go", "Deny, and tell Claude", feedback="call it else")
    assert result_text(entry).endswith("call it else") and not (wt / "other.txt").exists()
    settle(manual_run, "wd done")
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


def test_edit_allowed_changes_the_file_and_denied_does_not(scripted_model, manual_run, claude_home):
    notes = claude_home.worktree / "notes.txt"
    notes.write_text("alpha\nbeta\ngamma\n")
    edit = {"file_path": str(notes), "old_string": "beta", "new_string": "BETA"}
    scripted_model.script.add(when("EDIT-D", tool_use("Edit", edit), text("ed done")))
    scripted_model.script.add(when("EDIT-A", tool_use("Edit", edit), text("ea done")))
    dialog, entry = answer(manual_run, "EDIT-D go", "Deny")
    assert dialog.header == "Edit" and dialog.body.splitlines()[-2:] == ["-beta", "+BETA"]
    assert result_text(entry).startswith(REJECTED) and notes.read_text() == "alpha\nbeta\ngamma\n"
    manual_run.wait(lambda r: r.last.state == RunState.IDLE, timeout=20, what="idle after the denial")
    dialog, _ = answer(manual_run, "EDIT-A go", "Allow once")
    settle(manual_run, "ea done")
    assert notes.read_text() == "alpha\nBETA\ngamma\n"
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


def test_accept_every_edit_switches_to_accept_edits_and_the_next_edit_runs_unasked(
    scripted_model, manual_run, claude_home
):
    wt = claude_home.worktree
    first = {"file_path": str(wt / "one.txt"), "content": "1\n"}
    second = {"file_path": str(wt / "two.txt"), "content": "2\n"}
    scripted_model.script.add(when("EDITS-1", tool_use("Write", first), text("e1 done")))
    scripted_model.script.add(when("EDITS-2", tool_use("Write", second), text("e2 done")))
    dialog, _ = answer(manual_run, "EDITS-1 go", "Allow, and accept every edit")
    settle(manual_run, "e1 done")
    asked = len(permission_requests(manual_run))
    assert next_prompt_mode(manual_run, "EDITS-2 go") == "acceptEdits"
    settle(manual_run, "e2 done")
    assert (wt / "one.txt").exists() and (wt / "two.txt").exists()
    assert len(permission_requests(manual_run)) == asked
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


# --- an interrupt and an answer on the same prompt -----------------------------------------


def test_an_interrupt_while_an_approval_is_pending_sends_nothing_and_the_answer_still_lands(
    scripted_model, manual_run, claude_home
):
    scripted_model.script.add(when("RACE-1", bash("touch raced.txt"), text("race1 done")))
    dialog = raise_approval(manual_run, "RACE-1 go")
    # Esc on the prompt would deny the tool with no one's answer: refused, nothing sent.
    with pytest.raises(PromptPending, match="asking permission: allow or deny it above"):
        manual_run.provider.interrupt(manual_run.handle)
    assert manual_run.provider.pending_dialog(manual_run.handle) == dialog
    deny = option(dialog, "Deny, and tell Claude")
    manual_run.provider.answer_dialog(manual_run.handle, dialog, [Answer(choices=(deny,), text="use printf")])
    entry = recorded(manual_run, dialog.tool_use_id)
    assert result_text(entry).startswith(REJECTED) and result_text(entry).endswith("use printf")
    settle(manual_run, "race1 done")
    assert "use printf" not in manual_run.texts(MessageKind.USER_TEXT)
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


def test_an_answer_to_a_prompt_an_interrupt_dismissed_is_refused_and_types_nothing(
    scripted_model, manual_run, claude_home, monkeypatch
):
    """The interrupt's check ran before the prompt was drawn (its PermissionRequest came a moment
    later), so its Esc dismissed the prompt; the page still offered it, and the operator's
    "Deny, and tell Claude" came 50 ms after. Before the lock and the re-check, the answer's
    keys went to the composer and the feedback became a new prompt the model answered."""
    scripted_model.script.add(when("RACE-2", bash("touch raced2.txt"), text("race2 done")))
    dialog = raise_approval(manual_run, "RACE-2 go")
    provider = manual_run.provider
    # The check as it read just before the PermissionRequest: nothing asked yet.
    with monkeypatch.context() as m:
        m.setattr(provider, "_asking", lambda run: None)
        provider.interrupt(manual_run.handle)
    feedback = "feedback that must not become a prompt"
    deny = option(dialog, "Deny, and tell Claude")
    with pytest.raises(StaleDialog, match="Nothing was sent"):
        provider.answer_dialog(manual_run.handle, dialog, [Answer(choices=(deny,), text=feedback)])
    entry = recorded(manual_run, dialog.tool_use_id)  # the Esc's own rejection
    assert result_text(entry).startswith(REJECTED) and feedback not in result_text(entry)
    manual_run.wait(lambda r: r.last.state == RunState.IDLE, timeout=20, what="idle after the interrupt")
    assert not (claude_home.worktree / "raced2.txt").exists()
    # lab sent no answer, so it compares the Esc's rejection with none (no false warning).
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []
    # Nothing reached the composer: the next prompt is recorded alone, and no user message
    # carries the feedback.
    scripted_model.script.add(when("AFTER-RACE", text("after done")))
    provider.reply(manual_run.handle, "AFTER-RACE go")
    settle(manual_run, "after done")
    assert [t for t in manual_run.texts(MessageKind.USER_TEXT) if "RACE" in t or feedback in t] == [
        "RACE-2 go",
        "AFTER-RACE go",
    ]


def test_two_permission_prompts_at_once_are_left_to_the_terminal_then_the_other_is_offered(
    scripted_model, manual_run, claude_home, tmp_path
):
    """Two Reads outside the worktree in one response run in parallel and both ask: the CLI
    draws one ("1 of 2") and the hooks do not say which, so lab offers neither (keys for one
    would answer the other) and leaves them to the terminal; once one is answered there, the
    other alone is offered, and lab's answer lands on it. COMPAT-dialogs.md §8."""
    outside = tmp_path / "outside"
    outside.mkdir()
    files = {name: outside / f"{name}.txt" for name in ("a", "b")}
    for name, path in files.items():
        path.write_text(f"contents of {name}\n")
    reads = [{"type": "tool_use", "name": "Read", "input": {"file_path": str(p)}} for p in files.values()]
    both = Turn(blocks=[{"type": "text", "text": "Reading both."}, *reads], label="two reads")
    scripted_model.script.add(when("TWO-READS", both, text("reads done")))
    run, provider = manual_run, manual_run.provider
    provider.reply(run.handle, "TWO-READS go")
    run.wait(lambda r: len(permission_requests(r)) == 2, timeout=60, what="both permission prompts")
    assert provider.pending_dialog(run.handle) is None
    assert provider.blocked_state(run.handle) == RunState.NEEDS_INPUT
    with pytest.raises(PromptPending, match="in its terminal"):
        provider.interrupt(run.handle)
    ids = {e["tool_input"]["file_path"]: e["tool_use_id"] for e in spool_events(run.handle.spool_dir)
           if e.get("hook_event_name") == "PreToolUse" and e.get("tool_name") == "Read"}  # fmt: skip
    # The operator answers the drawn one there ("1. Yes") once they see it: a key sent while a
    # picker first paints is dropped (compat §7), so like a person the test presses Enter again
    # while the first of the two is still on its screen.
    tmux, deadline = Tmux(run.handle.tmux_socket), time.monotonic() + 30
    while "1 of 2" not in run.pane():
        assert time.monotonic() < deadline, "the first prompt was never drawn"
        time.sleep(0.1)
    while "1 of 2" in run.pane():
        assert time.monotonic() < deadline, "Enter never answered the first prompt"
        tmux.send_keys(run.handle.tmux_session, "Enter")
        redrawn = time.monotonic() + 2
        while time.monotonic() < redrawn and "1 of 2" in run.pane():
            time.sleep(0.1)
    dialog = None
    deadline = time.monotonic() + 30
    while dialog is None and time.monotonic() < deadline:
        dialog = provider.pending_dialog(run.handle)
        time.sleep(0.05)
    assert dialog is not None, run.pane()
    (other,) = [path for path, tool_use_id in ids.items() if tool_use_id == dialog.tool_use_id]
    (first,) = [tool_use_id for tool_use_id in ids.values() if tool_use_id != dialog.tool_use_id]
    assert "contents of" in result_text(recorded(run, first))  # the one answered in the terminal
    provider.answer_dialog(run.handle, dialog, [Answer(choices=(option(dialog, "Allow once"),))])
    entry = recorded(run, dialog.tool_use_id)
    assert f"contents of {Path(other).stem}" in result_text(entry)
    settle(run, "reads done")
    assert backstop_warnings(run, dialog.tool_use_id) == []
