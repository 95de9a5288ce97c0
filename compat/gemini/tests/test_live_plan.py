"""Live: Gemini's plan approval (the exit_plan_mode tool) in a run started in plan mode
(`--approval-mode plan`, the spawn option): the plan file the call names shown as a PLAN dialog,
each row answered from lab by its pinned recipe and verified by the call's AfterTool; "keep
planning" is Esc and cancels the turn (compat/gemini/COMPAT.md §7)."""

from __future__ import annotations

import time

import pytest

from compat.gemini.scripted_model import exit_plan_mode, function_responses, shell, text, when, write_plan
from providers.errors import PromptPending, ReplyNotDelivered
from providers.gemini import provider as gemini_provider
from providers.gemini.dialogs import PLAN_AUTO, PLAN_FEEDBACK, PLAN_KEEP, PLAN_MANUAL
from providers.gemini.recipes import Recipe, key
from providers.schema import Answer, DialogKind, MessageKind, RunState

pytestmark = pytest.mark.live

PLAN = "# Plan\n\n1. Add the greeting\n2. Test it\n"


def _plan(run, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while (dialog := run.provider.pending_dialog(run.handle)) is None:
        assert time.monotonic() < deadline, f"no plan dialog; pane:\n{run.pane()}"
        time.sleep(0.05)
    assert dialog.kind == DialogKind.PLAN
    return dialog


def _row(dialog, key_: str) -> int:
    return next(i for i, o in enumerate(dialog.options) if o.key == key_)


def _outputs(gemini_rig) -> list[str]:
    """Every exit_plan_mode result the CLI sent the model, oldest first (each request carries
    the history: once each)."""
    seen: dict[str, None] = {}
    for r in gemini_rig.model.requests:
        if r.get("kind") == "turn" and isinstance(r.get("body"), dict):
            for f in function_responses(r["body"]):
                if f.get("name") == "exit_plan_mode":
                    seen.setdefault(f["response"]["output"], None)
    return list(seen)


def _start(gemini_rig, token: str, *turns):
    gemini_rig.model.script.add(when(token, write_plan("feature.md", PLAN), *turns))
    run = gemini_rig.start(options={"approval": "plan"})
    run.provider.reply(run.handle, f"{token} make a plan")
    return run


def test_a_plan_approved_on_the_page_leaves_plan_mode_asking_before_each_edit(gemini_rig):
    run = _start(
        gemini_rig,
        "PLANTOKEN-MANUAL",
        exit_plan_mode("feature.md"),
        shell("echo planned > planned.txt", "write a file"),
        text("Implemented."),
    )
    dialog = _plan(run)
    assert dialog.body == PLAN and dialog.header == "feature.md"
    assert [o.label for o in dialog.options] == [
        "Approve — edit files without asking",
        "Approve — ask before each edit",
        "Reject with feedback",
        "Reject — keep planning",
    ]
    with pytest.raises(PromptPending, match="asking for approval of a plan: answer it above"):
        run.provider.reply(run.handle, "a message while it asks")

    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(_row(dialog, PLAN_MANUAL),))])
    assert gemini_rig.model.wait_function_response("exit_plan_mode")["response"]["output"].startswith(
        "Plan approved. Switching to Default mode"
    )
    # Default mode: the next command asks.
    deadline = time.monotonic() + 30
    while (
        approval := run.provider.pending_dialog(run.handle)
    ) is None or approval.kind != DialogKind.APPROVAL:
        assert time.monotonic() < deadline, f"the command after the plan did not ask; pane:\n{run.pane()}"
        time.sleep(0.05)
    run.provider.answer_dialog(run.handle, approval, [Answer(choices=(0,))])
    run.wait(lambda r: r.answered("Implemented."), what="the turn after the plan")
    assert not [m for m in run.messages if m.is_error]


def test_feedback_keeps_planning_and_the_next_plan_is_approved_into_auto_edit(gemini_rig):
    run = _start(
        gemini_rig,
        "PLANTOKEN-FEEDBACK",
        exit_plan_mode("feature.md"),
        exit_plan_mode("feature.md"),
        text("Approved at last."),
    )
    dialog = _plan(run)
    run.provider.answer_dialog(
        run.handle, dialog, [Answer(choices=(_row(dialog, PLAN_FEEDBACK),), text="Add a third step")]
    )
    deadline = time.monotonic() + 30
    while (
        again := run.provider.pending_dialog(run.handle)
    ) is None or again.tool_use_id == dialog.tool_use_id:
        assert time.monotonic() < deadline, f"no second plan dialog; pane:\n{run.pane()}"
        time.sleep(0.05)
    run.provider.answer_dialog(run.handle, again, [Answer(choices=(_row(again, PLAN_AUTO),))])
    run.wait(lambda r: r.answered("Approved at last."), what="the turn after the second plan")
    outputs = _outputs(gemini_rig)
    assert outputs[0].startswith("Plan rejected. User feedback: Add a third step")
    assert outputs[1].startswith("Plan approved. Switching to Auto-Edit mode")


def test_keep_planning_cancels_the_turn_and_a_wrong_row_is_reported(gemini_rig, monkeypatch):
    run = _start(gemini_rig, "PLANTOKEN-KEEP", exit_plan_mode("feature.md"), text("unused"))
    dialog = _plan(run)
    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(_row(dialog, PLAN_KEEP),))])
    run.wait(
        lambda r: "Request cancelled." in r.texts(MessageKind.LIFECYCLE) and r.state == RunState.IDLE,
        what="the cancelled turn",
    )
    assert run.provider.pending_dialog(run.handle) is None

    # The backstop: keys that land on another row than lab meant are no success.
    real = gemini_provider.plan_recipe

    def one_row_up(dialog, answers):
        recipe = real(dialog, answers)
        return Recipe(tuple(op for op in recipe.ops if op != key("Down")), recipe.records)

    monkeypatch.setattr(gemini_provider, "plan_recipe", one_row_up)
    gemini_rig.model.script.add(
        when("PLANTOKEN-AGAIN", write_plan("second.md", PLAN), exit_plan_mode("second.md"), text("Done."))
    )
    run.provider.reply(run.handle, "PLANTOKEN-AGAIN plan again")
    second = _plan(run)
    with pytest.raises(ReplyNotDelivered, match="recorded a different answer to the plan than lab sent"):
        run.provider.answer_dialog(run.handle, second, [Answer(choices=(_row(second, PLAN_MANUAL),))])
    run.wait(lambda r: r.answered("Done."), what="the turn after the plan")
    warnings = [m.text for m in run.messages if m.is_error and m.kind == MessageKind.LIFECYCLE]
    assert len(warnings) == 1 and "Auto-Edit" in warnings[0], warnings
