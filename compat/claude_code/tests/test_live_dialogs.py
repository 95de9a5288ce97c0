"""Live: every dialog shape answered through the production path against the real 2.1.328 TUI.

The dialog comes from the adapter itself (pending_dialog over the hook spool, or the
transcript read), the answer goes through ClaudeCodeProvider.answer_dialog with the production
recipes and pacing, and the assertion is on what the CLI recorded (toolUseResult), the same
comparison the backstop makes. COMPAT-dialogs.md §7 and §8 name these tests.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest

from compat.adapter import AdapterRun
from compat.claude_code.adapter import backstop_warnings, recorded, spawn_adapter_run
from compat.claude_code.scripted_model import ask_user_question, plan_turns, text, tool_use, when
from providers.claude_code import recipes
from providers.claude_code.recipes import Recipe, key
from providers.schema import Answer, Dialog, DialogKind, MessageKind, RunState
from providers.tmux import Tmux

pytestmark = pytest.mark.live

COLOR = "Which color do you prefer?"


def _spawn(tmp_path, claude_home, mode: str) -> AdapterRun:
    return spawn_adapter_run(tmp_path, claude_home.worktree, {"permission_mode": mode})


@pytest.fixture
def plan_run(adapter_settings, claude_home, tmp_path):
    run = _spawn(tmp_path, claude_home, "plan")
    yield run
    Tmux(run.handle.tmux_socket).kill_server()


def raise_dialog(run: AdapterRun, prompt: str, timeout: float = 60.0) -> tuple[Dialog, str]:
    """Send `prompt`, wait for the adapter to report the dialog; (dialog, which channel first)."""
    run.provider.reply(run.handle, prompt)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = run.provider.pending_dialog(run.handle)
        if live is not None:
            return live, "spool"
        run.refresh()
        if run.last is not None and run.last.dialog is not None:
            return run.last.dialog, "transcript"
        time.sleep(0.05)
    raise AssertionError(f"no dialog appeared: {run.messages[-6:]!r}\n{run.pane()}")


def answer(run: AdapterRun, prompt: str, answers: list[Answer]) -> tuple[Dialog, dict[str, Any], float]:
    dialog, _channel = raise_dialog(run, prompt)
    started = time.monotonic()
    run.provider.answer_dialog(run.handle, dialog, answers)
    elapsed = time.monotonic() - started
    return dialog, recorded(run, dialog.tool_use_id), elapsed


def settle_turn(run: AdapterRun, after: str) -> None:
    run.wait(
        lambda r: after in r.texts(MessageKind.ASSISTANT_TEXT) and r.last.state == RunState.IDLE,
        timeout=30,
        what=f"the turn after the answer ({after})",
    )


# --- AskUserQuestion ---------------------------------------------------------------------------


def test_single_option_row_1_is_recorded(scripted_model, manual_run):
    scripted_model.script.add(when("ASK1", ask_user_question(), text("Thanks for choosing.")))
    dialog, entry, _ = answer(manual_run, "ASK1 please", [Answer(choices=(1,))])
    assert dialog.kind == DialogKind.QUESTION and [o.label for o in dialog.options] == [
        "Red",
        "Green",
        "Blue",
    ]
    assert entry["toolUseResult"]["answers"] == {COLOR: "Green"}
    settle_turn(manual_run, "Thanks for choosing.")
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


def test_single_option_last_row(scripted_model, manual_run):
    scripted_model.script.add(when("ASK1", ask_user_question(), text("Blue it is.")))
    _, entry, _ = answer(manual_run, "ASK1 please", [Answer(choices=(2,))])
    assert entry["toolUseResult"]["answers"] == {COLOR: "Blue"}


def test_free_text_is_typed_first_then_submitted(scripted_model, manual_run):
    scripted_model.script.add(when("ASK1", ask_user_question(), text("Purple, noted.")))
    _, entry, _ = answer(manual_run, "ASK1 please", [Answer(text="I prefer purple, really")])
    assert entry["toolUseResult"]["answers"] == {COLOR: "I prefer purple, really"}


def test_decline_is_esc_and_records_a_rejection(scripted_model, manual_run):
    scripted_model.script.add(when("ASK1", ask_user_question(), text("never")))
    dialog, entry, _ = answer(manual_run, "ASK1 please", [])
    assert entry["toolUseResult"] == "User rejected tool use"
    manual_run.wait(lambda r: r.last.state == RunState.IDLE, timeout=20, what="idle after the decline")
    # compat §8: a declined tool gets no PostToolUse; the transcript's tool_result resolves it.
    assert manual_run.provider.pending_dialog(manual_run.handle) is None
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


TWO = [
    {
        "question": "Which fruit do you want?",
        "header": "Fruit",
        "options": [{"label": "Apple", "description": "Crunchy"}, {"label": "Banana", "description": "Soft"}],
        "multiSelect": False,
    },
    {
        "question": "Which drink do you want?",
        "header": "Drink",
        "options": [{"label": "Tea", "description": "Hot"}, {"label": "Juice", "description": "Cold"}],
        "multiSelect": False,
    },
]
THIRD = {
    "question": "Which size?",
    "header": "Size",
    "options": [
        {"label": "Small", "description": "S"},
        {"label": "Medium", "description": "M"},
        {"label": "Large", "description": "L"},
    ],
    "multiSelect": False,
}


def test_two_questions_each_advance_then_submit(scripted_model, manual_run):
    scripted_model.script.add(when("ASK2", ask_user_question(questions=TWO), text("Two answers.")))
    dialog, entry, _ = answer(manual_run, "ASK2 please", [Answer(choices=(1,)), Answer(choices=(0,))])
    assert dialog.questions is not None and len(dialog.questions) == 2
    want = {"Which fruit do you want?": "Banana", "Which drink do you want?": "Tea"}
    assert entry["toolUseResult"]["answers"] == want
    settle_turn(manual_run, "Two answers.")
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


def test_three_questions_with_a_free_text_answer(scripted_model, manual_run):
    three = ask_user_question(questions=[*TWO, THIRD])
    scripted_model.script.add(when("ASK3", three, text("Three answers.")))
    answers = [Answer(choices=(0,)), Answer(text="Sparkling water"), Answer(choices=(2,))]
    _, entry, _ = answer(manual_run, "ASK3 please", answers)
    assert entry["toolUseResult"]["answers"] == {
        "Which fruit do you want?": "Apple",
        "Which drink do you want?": "Sparkling water",
        "Which size?": "Large",
    }


TOPPINGS = [("Cheese", "Mozzarella"), ("Ham", "Smoked"), ("Olives", "Black"), ("Onion", "Red")]


def test_multiselect_with_the_free_text_row(scripted_model, manual_run):
    turn = ask_user_question("Which toppings do you want?", "Toppings", TOPPINGS, multi_select=True)
    scripted_model.script.add(when("ASKM", turn, text("Toppings noted.")))
    dialog, entry, _ = answer(manual_run, "ASKM please", [Answer(choices=(2, 0), text="extra pineapple")])
    got = entry["toolUseResult"]["answers"]["Which toppings do you want?"]
    assert set(got.split(", ")) == {"Cheese", "Olives", "extra pineapple"}
    settle_turn(manual_run, "Toppings noted.")
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


def test_multiselect_options_only(scripted_model, manual_run):
    turn = ask_user_question("Which toppings do you want?", "Toppings", TOPPINGS, multi_select=True)
    scripted_model.script.add(when("ASKM", turn, text("Toppings noted.")))
    _, entry, _ = answer(manual_run, "ASKM please", [Answer(choices=(1, 3))])
    assert set(entry["toolUseResult"]["answers"]["Which toppings do you want?"].split(", ")) == {
        "Ham",
        "Onion",
    }


# --- ExitPlanMode ------------------------------------------------------------------------------

PLAN = "# Plan\n\n1. Create hello.txt\n2. Write hello into it\n"


def mode_on_next_prompt(run: AdapterRun, prompt: str) -> str:
    """The permission mode the CLI left the session in: the next prompt's user entry records
    it (`permissionMode`), and any `permission-mode` entry written since must agree."""
    path = run.provider.locate_transcript(run.handle)
    start = _size(path)
    run.provider.reply(run.handle, prompt)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(path, "rb") as f:
            f.seek(start)
            entries = [json.loads(raw) for raw in f.read().splitlines() if raw.strip()]
        user = [
            e for e in entries if e.get("type") == "user" and e.get("message", {}).get("content") == prompt
        ]
        if user:
            mode = user[0]["permissionMode"]
            recorded = {e["permissionMode"] for e in entries if e.get("type") == "permission-mode"}
            assert recorded <= {mode}, f"permission-mode entries {recorded} vs the prompt's {mode}"
            return mode
        time.sleep(0.1)
    raise AssertionError(f"the prompt {prompt!r} was not recorded")


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


# compat §7: each plan row, by the permission mode it leaves (a wrong row mapping fails here).


def test_plan_approve_row_0_switches_to_auto_mode(scripted_model, plan_run):
    scripted_model.script.add(when("PLAN1", plan_turns(PLAN, after="Approved, coding.")))
    dialog, entry, _ = answer(plan_run, "PLAN1 please", [Answer(choices=(recipes.PLAN_APPROVE_AUTO,))])
    assert dialog.kind == DialogKind.PLAN and dialog.body.strip() == PLAN.strip()
    assert dialog.options[recipes.PLAN_APPROVE_AUTO].label == "Approve — switch to auto mode"
    assert isinstance(entry["toolUseResult"], dict) and entry["toolUseResult"]["plan"] == PLAN
    settle_turn(plan_run, "Approved, coding.")
    assert backstop_warnings(plan_run, dialog.tool_use_id) == []
    assert mode_on_next_prompt(plan_run, "which mode now") == "auto"


def test_plan_approve_row_1_asks_before_each_action(scripted_model, plan_run):
    scripted_model.script.add(when("PLAN1", plan_turns(PLAN, after="Approved, manual.")))
    dialog, entry, _ = answer(plan_run, "PLAN1 please", [Answer(choices=(recipes.PLAN_APPROVE_MANUAL,))])
    assert dialog.options[recipes.PLAN_APPROVE_MANUAL].label == "Approve — ask before each action"
    assert isinstance(entry["toolUseResult"], dict) and entry["toolUseResult"]["plan"] == PLAN
    settle_turn(plan_run, "Approved, manual.")
    assert backstop_warnings(plan_run, dialog.tool_use_id) == []
    assert mode_on_next_prompt(plan_run, "which mode now") == "default"  # the UI's "manual"


def test_plan_reject_with_feedback(scripted_model, plan_run):
    scripted_model.script.add(when("PLAN1", plan_turns(PLAN, after="Revising.")))
    feedback = "Please add a step 3 for tests"
    reject = Answer(choices=(recipes.PLAN_REJECT_FEEDBACK,), text=feedback)
    dialog, entry, _ = answer(plan_run, "PLAN1 please", [reject])
    assert entry.get("userFeedback") == feedback
    assert entry["message"]["content"][0]["is_error"] is True
    settle_turn(plan_run, "Revising.")
    assert backstop_warnings(plan_run, dialog.tool_use_id) == []
    assert mode_on_next_prompt(plan_run, "which mode now") == "plan"


def test_plan_reject_keep_planning_is_esc(scripted_model, plan_run):
    scripted_model.script.add(when("PLAN1", plan_turns(PLAN, after="never")))
    dialog, entry, _ = answer(plan_run, "PLAN1 please", [Answer(choices=(recipes.PLAN_REJECT_REFINE,))])
    assert entry["toolUseResult"] == "User rejected tool use"
    plan_run.wait(lambda r: r.last.state == RunState.IDLE, timeout=20, what="idle after the rejection")
    assert backstop_warnings(plan_run, dialog.tool_use_id) == []
    assert mode_on_next_prompt(plan_run, "which mode now") == "plan"


def test_plan_without_a_plan_file_approves_with_its_own_recipe(scripted_model, plan_run):
    scripted_model.script.add(when("PLAN0", plan_turns(PLAN, write_file=False, after="Exited plan mode.")))
    dialog, entry, _ = answer(plan_run, "PLAN0 please", [Answer(choices=(recipes.PLAN_APPROVE_MANUAL,))])
    assert dialog.kind == DialogKind.PLAN and not dialog.body
    assert isinstance(entry["toolUseResult"], dict) and entry["toolUseResult"]["plan"] is None
    settle_turn(plan_run, "Exited plan mode.")
    assert mode_on_next_prompt(plan_run, "which mode now") == "default"


# --- backstop and live signals ----------------------------------------------------------------


def test_a_wrong_recipe_produces_the_backstop_warning(scripted_model, manual_run, monkeypatch):
    scripted_model.script.add(when("ASK1", ask_user_question(), text("Got it.")))
    real = recipes.recipe_for

    def off_by_one(dialog: Dialog, answers: list[Answer]) -> Recipe:
        # Test-only desync: the recipe lands one row below the intended answer.
        real(dialog, answers)
        return Recipe("wrong", (key("Down"), key("Down"), key("Enter")))

    monkeypatch.setattr(recipes, "recipe_for", off_by_one)
    dialog, entry, _ = answer(manual_run, "ASK1 please", [Answer(choices=(1,))])
    assert entry["toolUseResult"]["answers"] == {COLOR: "Blue"}
    (warning,) = backstop_warnings(manual_run, dialog.tool_use_id)
    assert "Green" in warning and "Blue" in warning


def test_a_bash_permission_prompt_is_an_approval_until_answered_in_the_terminal(scripted_model, manual_run):
    bash = tool_use("Bash", {"command": "touch x.txt", "description": "touch"})
    scripted_model.script.add(when("BASH1", bash, text("done")))
    manual_run.provider.reply(manual_run.handle, "BASH1 please")
    deadline = time.monotonic() + 40
    while (dialog := manual_run.provider.pending_dialog(manual_run.handle)) is None:
        assert time.monotonic() < deadline, "no PermissionRequest approval"
        time.sleep(0.05)
    assert dialog.kind == DialogKind.APPROVAL and dialog.body == "touch x.txt"
    assert manual_run.provider.blocked_state(manual_run.handle) is None  # the dialog stands for it
    # The operator, attached to the terminal, approves it there (Enter on "1. Yes", compat §7)
    # once they see it: a key sent while the picker first paints is dropped (compat §7), so
    # like a person the test presses Enter again while the prompt is still on its screen.
    tmux = Tmux(manual_run.handle.tmux_socket)
    deadline = time.monotonic() + 30
    while "Do you want to proceed?" not in manual_run.pane():
        assert time.monotonic() < deadline, "the permission prompt was never drawn"
        time.sleep(0.1)
    while "Do you want to proceed?" in manual_run.pane():
        assert time.monotonic() < deadline, "Enter never answered the permission prompt"
        tmux.send_keys(manual_run.handle.tmux_session, "Enter")
        settle = time.monotonic() + 2
        while time.monotonic() < settle and "Do you want to proceed?" in manual_run.pane():
            time.sleep(0.1)
    manual_run.wait(
        lambda r: "done" in r.texts(MessageKind.ASSISTANT_TEXT), timeout=30, what="the Bash result"
    )
    assert manual_run.provider.pending_dialog(manual_run.handle) is None
    assert manual_run.provider.blocked_state(manual_run.handle) is None


# compat §4: a multi-select question inside a form commits on its "Next" row and advances.
FORM_TOPPINGS = {
    "question": "Which toppings do you want?",
    "header": "Toppings",
    "options": [{"label": label, "description": desc} for label, desc in TOPPINGS],
    "multiSelect": True,
}


def test_a_form_opening_with_a_multiselect(scripted_model, manual_run):
    turn = ask_user_question(questions=[FORM_TOPPINGS, TWO[1]])
    scripted_model.script.add(when("ASKF", turn, text("Form noted.")))
    dialog, entry, _ = answer(manual_run, "ASKF please", [Answer(choices=(2, 0)), Answer(choices=(1,))])
    got = entry["toolUseResult"]["answers"]
    assert set(got["Which toppings do you want?"].split(", ")) == {"Cheese", "Olives"}
    assert got["Which drink do you want?"] == "Juice"
    settle_turn(manual_run, "Form noted.")
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []


def test_a_form_ending_with_a_multiselect_and_free_text(scripted_model, manual_run):
    turn = ask_user_question(questions=[TWO[0], FORM_TOPPINGS])
    scripted_model.script.add(when("ASKF", turn, text("Form noted.")))
    answers = [Answer(choices=(1,)), Answer(choices=(3,), text="extra basil")]
    dialog, entry, _ = answer(manual_run, "ASKF please", answers)
    got = entry["toolUseResult"]["answers"]
    assert got["Which fruit do you want?"] == "Banana"
    assert set(got["Which toppings do you want?"].split(", ")) == {"Onion", "extra basil"}
    settle_turn(manual_run, "Form noted.")
    assert backstop_warnings(manual_run, dialog.tool_use_id) == []
