"""LiveSignals over spool fixtures: realistic hook payloads as 2.1.328 writes them (compat §8)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from compat.claude_code.home import fixtures_dir
from providers.claude_code import ClaudeCodeProvider
from providers.claude_code.spool import fold, sweepable
from providers.hookspool import spool_events
from providers.schema import DialogKind, RunHandle, RunState

SESSION = "5b0c1d2e-0000-4000-8000-000000000001"
QUESTIONS = [
    {
        "question": "Which color do you prefer?",
        "header": "Color",
        "options": [{"label": "Red", "description": "r"}, {"label": "Green", "description": "g"}],
        "multiSelect": False,
    }
]
PLAN = "# Plan\n\n1. x\n"


def common(name: str) -> dict[str, object]:
    return {
        "session_id": SESSION,
        "transcript_path": f"/home/x/.claude/projects/-wt/{SESSION}.jsonl",
        "cwd": "/wt",
        "hook_event_name": name,
        "permission_mode": "default",
    }


def session_start() -> dict[str, object]:
    return {**common("SessionStart"), "source": "startup", "model": "claude-opus-5-5"}


def prompt(text: str = "ASK1 with hooks") -> dict[str, object]:
    return {**common("UserPromptSubmit"), "prompt": text}


def pre(tool: str, tool_use_id: str, tool_input: dict[str, object]) -> dict[str, object]:
    return {**common("PreToolUse"), "tool_name": tool, "tool_input": tool_input, "tool_use_id": tool_use_id}


def permission(tool: str) -> dict[str, object]:
    # compat §8: the payload repeats the tool's input; Bash adds its suggestions.
    extra = {"permission_suggestions": [{"type": "setMode", "mode": "acceptEdits"}]} if tool == "Bash" else {}
    tool_input = {"command": "touch x", "description": "touch"} if tool == "Bash" else {}
    return {**common("PermissionRequest"), "tool_name": tool, "tool_input": tool_input, **extra}


def post(tool: str, tool_use_id: str, response: object) -> dict[str, object]:
    return {
        **common("PostToolUse"),
        "tool_name": tool,
        "tool_input": {},
        "tool_response": response,
        "tool_use_id": tool_use_id,
        "duration_ms": 1,
    }


def notification(
    kind: str = "permission_prompt", message: str = "Claude needs your permission"
) -> dict[str, object]:
    return {**common("Notification"), "message": message, "notification_type": kind}


def stop() -> dict[str, object]:
    return {**common("Stop"), "stop_hook_active": False, "last_assistant_message": "ok"}


ASK = pre("AskUserQuestion", "toolu_ask", {"questions": QUESTIONS})
PLAN_PRE = pre("ExitPlanMode", "toolu_plan", {"plan": PLAN, "planFilePath": "/h/.claude/plans/p.md"})
BASH = pre("Bash", "toolu_bash", {"command": "touch x", "description": "touch"})


class Spool:
    """A spool dir written the way providers/hook_writer.py writes it: `<time_ns:020d>-<pid>.json`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir()
        self.t = time.time_ns() - 120 * 1_000_000_000

    def write(self, *events: dict[str, object], step_ms: int = 10) -> None:
        for e in events:
            self.t += step_ms * 1_000_000
            (self.path / f"{self.t:020d}-4242.json").write_text(json.dumps(e))

    def view(self, resolved=frozenset()):
        return fold(spool_events(str(self.path)), resolved)


@pytest.fixture
def spool(tmp_path):
    return Spool(tmp_path / "spool")


def test_a_pre_tool_use_for_ask_user_question_is_a_pending_question(spool):
    spool.write(session_start(), prompt(), ASK)
    view = spool.view()
    assert view.dialog is not None and view.dialog.tool_use_id == "toolu_ask"
    assert view.dialog.kind == DialogKind.QUESTION and view.dialog.prompt == "Which color do you prefer?"
    assert not view.blocked


def test_post_tool_use_resolves_it(spool):
    spool.write(prompt(), ASK, permission("AskUserQuestion"))
    spool.write(post("AskUserQuestion", "toolu_ask", {"answers": {"Which color do you prefer?": "Green"}}))
    assert spool.view().dialog is None


def test_a_decline_has_no_post_tool_use_the_transcript_result_resolves_it(spool):
    spool.write(prompt(), ASK, permission("AskUserQuestion"))
    assert spool.view().dialog is not None
    assert spool.view(resolved={"toolu_ask"}).dialog is None


def test_the_next_prompt_or_stop_clears_a_stale_picker(spool):
    spool.write(prompt(), ASK)
    spool.write(prompt("next"))
    assert spool.view().dialog is None


def test_the_plan_comes_from_pre_tool_use_whose_input_holds_the_plan(spool):
    spool.write(prompt("PLAN1"), PLAN_PRE, permission("ExitPlanMode"))
    view = spool.view()
    assert view.dialog is not None and view.dialog.kind == DialogKind.PLAN and view.dialog.body == PLAN
    # PostToolUse's tool_input is {} for ExitPlanMode (compat §8): only the id resolves it.
    spool.write(post("ExitPlanMode", "toolu_plan", {"plan": PLAN, "isAgent": False, "filePath": "/p.md"}))
    assert spool.view().dialog is None


def test_the_permission_request_is_the_later_settle_anchor(spool):
    spool.write(prompt(), ASK)
    first = spool.view().pending[-1]
    spool.write(permission("AskUserQuestion"), step_ms=40)
    anchored = spool.view().pending[-1]
    assert first.signal_ns == first.seen_ns
    assert anchored.signal_ns - anchored.seen_ns == 40_000_000


def test_a_pickers_own_permission_notification_is_not_needs_input(spool):
    spool.write(prompt(), ASK, permission("AskUserQuestion"), notification())
    view = spool.view()
    assert view.dialog is not None and not view.blocked
    spool.write(
        prompt("PLAN1"),
        PLAN_PRE,
        permission("ExitPlanMode"),
        notification(message="Claude Code needs your approval for the plan"),
    )
    assert not spool.view().blocked


def test_a_bash_permission_request_is_an_approval_until_post_tool_use(spool):
    spool.write(prompt("BASH1"), BASH)
    assert spool.view().dialog is None  # no prompt is drawn before the PermissionRequest
    spool.write(permission("Bash"))
    dialog = spool.view().dialog
    assert dialog.kind == DialogKind.APPROVAL and dialog.tool_use_id == "toolu_bash"
    assert dialog.header == "Bash" and dialog.body == "touch x" and "touch" in dialog.prompt
    spool.write(notification())  # the prompt's own reminder (~6 s later): the dialog stands for it
    view = spool.view()
    assert view.dialog == dialog and not view.blocked
    spool.write(post("Bash", "toolu_bash", {"stdout": "", "stderr": ""}))
    assert spool.view().dialog is None and not spool.view().blocked


def test_a_permission_prompt_without_its_pre_tool_use_is_blocked_not_answerable(spool):
    # Nothing to pair the PermissionRequest with: lab cannot name the tool_use, so it offers no
    # dialog and shows needs_input with the attach command once the notification comes.
    spool.write(prompt("BASH1"), permission("Bash"), notification())
    view = spool.view()
    assert view.dialog is None and view.blocked and view.blocked_tool == "Bash"


def test_a_denied_bash_is_resolved_by_the_transcript_or_the_next_prompt(spool):
    spool.write(prompt("BASH1"), BASH, permission("Bash"), notification())
    assert spool.view().dialog is not None
    assert spool.view(resolved={"toolu_bash"}).dialog is None
    assert not spool.view(resolved={"toolu_bash"}).blocked
    spool.write(prompt("next"))
    assert spool.view().dialog is None and not spool.view().blocked


def test_a_permission_request_is_open_at_once_until_its_tool_resolves(spool):
    # The reply guard must not wait ~6 s for the reminder Notification: keys sent while the
    # prompt is shown would answer it.
    spool.write(prompt("BASH1"), BASH, permission("Bash"))
    view = spool.view()
    assert view.permission_open and view.permission_tool_use_id == "toolu_bash" and not view.blocked
    assert not spool.view(resolved=frozenset({"toolu_bash"})).permission_open  # rejected: tool_result
    spool.write(post("Bash", "toolu_bash", {"stdout": ""}))
    assert not spool.view().permission_open


def test_an_open_permission_request_is_kept_by_the_sweep(spool):
    spool.write(prompt("BASH1"), BASH, permission("Bash"))
    view = spool.view()
    assert sweepable(view, time.time_ns()) == [view.names[0]]  # only the prompt's own hook goes


def test_idle_prompt_notifications_block_nothing(spool):
    spool.write(prompt(), stop(), notification("idle_prompt", "Claude is waiting for your input"))
    assert not spool.view().blocked and spool.view().dialog is None


def test_a_half_written_file_is_never_read(spool):
    spool.write(prompt(), ASK)
    (spool.path / ".00000000000000000001-1.json.tmp").write_text('{"hook_event_name": "PostTo')
    assert spool.view().dialog is not None


def test_sweep_keeps_the_newest_session_start_and_what_is_pending(spool):
    spool.write(session_start(), prompt(), ASK, permission("AskUserQuestion"))
    spool.write(post("AskUserQuestion", "toolu_ask", {}), stop(), prompt("PLAN1"), PLAN_PRE)
    view = spool.view()
    gone = sweepable(view, time.time_ns())
    for name in gone:
        os.unlink(spool.path / name)
    after = spool.view()
    assert after.dialog is not None and after.dialog.tool_use_id == "toolu_plan"
    names = [e["hook_event_name"] for e in spool_events(str(spool.path))]
    assert names == ["SessionStart", "PreToolUse"]


def test_sweep_never_deletes_fresh_files(spool):
    spool.write(prompt(), ASK)
    spool.write(post("AskUserQuestion", "toolu_ask", {}))
    view = spool.view()
    assert sweepable(view, spool.t + 1_000_000_000) == []  # all under 30 s old


# --- through the adapter ------------------------------------------------------------------------


@pytest.fixture
def provider(settings):
    return ClaudeCodeProvider()


def handle_for(spool: Spool, transcript_path: str = "") -> RunHandle:
    return RunHandle(
        run_id=1,
        worktree="/wt",
        tmux_socket="labtest-x",
        tmux_session="s",
        spool_dir=str(spool.path),
        transcript_path=transcript_path,
    )


def test_the_adapter_reports_question_and_needs_input(provider, spool):
    h = handle_for(spool)
    spool.write(session_start(), prompt(), ASK)
    assert provider.pending_dialog(h).tool_use_id == "toolu_ask"
    assert provider.blocked_state(h) is None
    spool.write(post("AskUserQuestion", "toolu_ask", {}), BASH, permission("Bash"), notification())
    assert provider.pending_dialog(h).kind == DialogKind.APPROVAL  # answerable: no blocked state
    assert provider.blocked_state(h) is None
    spool.write(post("Bash", "toolu_bash", {}), permission("Bash"), notification())  # no Pre
    assert provider.pending_dialog(h) is None
    assert provider.blocked_state(h) == RunState.NEEDS_INPUT


def test_the_view_is_cached_on_the_spool_signature(provider, spool, monkeypatch):
    h = handle_for(spool)
    spool.write(prompt(), ASK)
    provider.pending_dialog(h)
    calls = []
    from providers import tui
    from providers.claude_code import provider as claude_provider

    monkeypatch.setattr(tui, "spool_events", lambda d: calls.append(d) or [])
    monkeypatch.setattr(claude_provider, "spool_events", lambda d: calls.append(d) or [])
    for _ in range(50):
        assert provider.pending_dialog(h) is not None  # no re-read: still the cached view
    assert calls == []


def test_a_payload_renamed_in_within_the_same_clock_tick_is_seen(provider, spool):
    """The hook writes `.<name>.tmp` and renames it to `<name>`; a watcher woken by the create
    may look in between. When the rename falls in the same tick of the filesystem's coarse
    clock the directory's mtime and entry count do not change: the view must still see it."""
    h = handle_for(spool)
    spool.write(session_start(), prompt())
    spool.t += 10_000_000
    name = f"{spool.t:020d}-4242.json"
    tmp = spool.path / f".{name}.tmp"
    tmp.write_text(json.dumps(ASK))
    assert provider.pending_dialog(h) is None  # looked while only the temp file was there
    before = os.stat(spool.path).st_mtime_ns
    tmp.rename(spool.path / name)
    os.utime(spool.path, ns=(before, before))  # the rename in the same coarse tick
    dialog = provider.pending_dialog(h)
    assert dialog is not None and dialog.tool_use_id == "toolu_ask"


def test_a_transcript_tool_result_reconciles_the_spool(provider, spool, tmp_path):
    """A decline gets no closing hook, only a tool_result in the transcript. pending_dialog
    finds it by itself: no read_transcript has to come first (nothing here calls it)."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    h = handle_for(spool, str(transcript))
    spool.write(prompt(), ASK)
    assert provider.pending_dialog(h) is not None
    result = {
        "type": "user",
        "uuid": "u1",
        "message": {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_ask", "content": "x", "is_error": True}
            ],
        },
        "toolUseResult": "User rejected tool use",
    }
    with transcript.open("a") as f:
        f.write(json.dumps(result) + "\n")
    assert provider.pending_dialog(h) is None
    assert ClaudeCodeProvider().pending_dialog(h) is None  # another worker's instance, as fresh


def test_the_intent_store_is_bounded_oldest_evicted(provider, tmp_path):
    from providers.claude_code.dialogs import Intent

    path = str(tmp_path / "t.jsonl")
    for i in range(130):
        provider.intent_store.record(path, f"t{i}", Intent(tool_use_id=f"t{i}", kind=DialogKind.QUESTION))
    kept = provider.intents(path)
    assert len(kept) == 100 and "t0" not in kept and "t129" in kept
    assert kept["t129"] == Intent(tool_use_id="t129", kind=DialogKind.QUESTION)


def test_the_hook_settings_cover_the_live_channel(provider, spool):
    hooks = provider.hook_settings(str(spool.path))["hooks"]
    assert {"PreToolUse", "PostToolUse", "PermissionRequest", "Notification"} <= set(hooks)


FIXTURES = fixtures_dir()


def test_the_adapter_arms_the_backstop_with_its_intents(provider):
    from providers.claude_code.dialogs import intent_for
    from providers.claude_code.transcript import dialog_for
    from providers.schema import Answer, Cursor

    path = str(FIXTURES / "askuserquestion__single_option.jsonl")
    lines = [json.loads(raw) for raw in Path(path).read_text().splitlines()]
    (block,) = [
        b
        for e in lines
        if e.get("type") == "assistant"
        for b in e["message"]["content"]
        if b.get("type") == "tool_use" and b["name"] == "AskUserQuestion"
    ]
    dialog = dialog_for(block["id"], block["name"], block["input"])
    recorded = next(e for e in lines if isinstance(e.get("toolUseResult"), dict))["toolUseResult"]["answers"]
    wrong = next(i for i, o in enumerate(dialog.options) if o.label not in recorded.values())

    def backstop(reader: ClaudeCodeProvider = provider) -> list:
        read = reader.read_transcript(path, Cursor(path=path))
        return [m for m in read.messages if "backstop" in m.native_id]

    assert backstop() == []  # no recorded intent stays silent
    provider.intent_store.record(path, dialog.tool_use_id, intent_for(dialog, [Answer(choices=(wrong,))]))
    warnings = backstop()
    assert len(warnings) == 1 and warnings[0].is_error
    assert backstop(ClaudeCodeProvider()) == warnings  # another worker, which never answered


def test_a_permission_request_is_paired_with_the_pre_tool_use_of_the_same_input(spool):
    # Two Bash calls in one turn: both PreToolUses can come before the first prompt is drawn.
    first = pre("Bash", "toolu_1", {"command": "touch x", "description": "touch"})
    second = pre("Bash", "toolu_2", {"command": "rm y", "description": "rm"})
    spool.write(prompt("TWO"), first, second, permission("Bash"))  # its input: touch x
    dialog = spool.view().dialog
    assert dialog.tool_use_id == "toolu_1" and dialog.body == "touch x"


def test_a_tool_that_began_is_unsettled_until_it_asks_or_finishes(spool):
    # A reply waits on it: the permission prompt for a just-begun tool comes after its Pre.
    spool.write(prompt("BASH1"), BASH)
    assert spool.view().unsettled_tool_ns > 0
    spool.write(permission("Bash"))
    assert spool.view().unsettled_tool_ns == 0  # it asked: the reply is refused instead
    spool.write(post("Bash", "toolu_bash", {"stdout": ""}), prompt("again"), BASH)
    assert spool.view().unsettled_tool_ns > 0
    spool.write(post("Bash", "toolu_bash", {"stdout": ""}))
    assert spool.view().unsettled_tool_ns == 0


def read_pre(tool_use_id: str, path: str) -> dict[str, object]:
    return pre("Read", tool_use_id, {"file_path": path})


def read_permission(path: str) -> dict[str, object]:
    return {**common("PermissionRequest"), "tool_name": "Read", "tool_input": {"file_path": path}}


def test_two_prompts_at_once_offer_neither_until_one_is_answered_in_the_terminal(spool):
    # Two Reads outside the worktree in one response, as 2.1.332 hooked them (live: Pres in call
    # order, PermissionRequests in the other): the CLI draws one ("1 of 2"), and which one the
    # hooks do not say (it drew a.txt here; for two WebFetches, the first PermissionRequest's).
    spool.write(
        prompt("TWO"),
        read_pre("toolu_a", "/out/a.txt"),
        read_pre("toolu_b", "/out/b.txt"),
        read_permission("/out/b.txt"),
        read_permission("/out/a.txt"),
        notification(),
        notification(),
    )
    view = spool.view()
    assert view.dialog is None and view.blocked  # needs input, in the terminal
    assert {p.dialog.tool_use_id for p in view.pending} == {"toolu_a", "toolu_b"}
    spool.write(post("Read", "toolu_a", {"type": "text"}))  # allowed there, and it ran
    view = spool.view()
    assert view.dialog is not None and view.dialog.tool_use_id == "toolu_b" and not view.blocked


def test_an_answer_offered_before_a_second_prompt_opened_sends_nothing(provider, spool, monkeypatch):
    from providers import tui
    from providers.claude_code.tests.test_replies import _Terminal
    from providers.errors import StaleDialog
    from providers.schema import Answer

    monkeypatch.setattr(tui, "Tmux", _Terminal)
    monkeypatch.setattr(_Terminal, "sent", [])
    spool.write(session_start(), prompt("TWO"), read_pre("toolu_a", "/out/a.txt"))
    spool.write(read_permission("/out/a.txt"))
    run = handle_for(spool)
    offered = provider.pending_dialog(run)
    assert offered is not None and offered.tool_use_id == "toolu_a"
    spool.write(read_pre("toolu_b", "/out/b.txt"), read_permission("/out/b.txt"))  # then the operator clicks
    with pytest.raises(StaleDialog, match="more than one permission at once"):
        provider.answer_dialog(run, offered, [Answer(choices=(0,))])  # Allow once: Enter
    assert _Terminal.sent == [] and provider.intents(provider.locate_transcript(run)) == {}
