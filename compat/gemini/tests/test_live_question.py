"""Live: Gemini's question dialog (the ask_user tool) shown from BeforeTool's `tool_input` and
answered from lab by its pinned recipe, verified by the call's AfterTool; a decline cancels the
turn; an answer the CLI recorded otherwise is reported, never a success, and the chat warns
(compat/gemini/COMPAT.md §7)."""

from __future__ import annotations

import json
import time

import pytest

from compat.gemini.scripted_model import ask_user, question, text, when
from providers.errors import PromptPending, ReplyNotDelivered
from providers.gemini import provider as gemini_provider
from providers.gemini.recipes import Recipe, key
from providers.schema import Answer, DialogKind, MessageKind, RunState

pytestmark = pytest.mark.live


def _question(run, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while (dialog := run.provider.pending_dialog(run.handle)) is None:
        assert time.monotonic() < deadline, f"no question dialog; pane:\n{run.pane()}"
        time.sleep(0.05)
    assert dialog.kind == DialogKind.QUESTION
    return dialog


def _recorded(gemini_rig) -> dict[str, str]:
    """What the tool sent the model back: the answers as the CLI recorded them."""
    response = gemini_rig.model.wait_function_response("ask_user")
    return json.loads(response["response"]["output"])["answers"]


def test_a_question_is_answered_from_lab_by_option(gemini_rig):
    gemini_rig.model.script.add(
        when(
            "QTOKEN-ONE",
            ask_user("Which color do you prefer?", "Color", ("Red", "Green", "Blue")),
            text("Green it is."),
        )
    )
    run = gemini_rig.start()
    run.provider.reply(run.handle, "QTOKEN-ONE go")
    dialog = _question(run)
    assert dialog.prompt == "Which color do you prefer?" and dialog.header == "Color"
    assert [o.label for o in dialog.options] == ["Red", "Green", "Blue"]
    assert dialog.free_text and not dialog.multi
    with pytest.raises(PromptPending, match="asking a question: answer it above"):
        run.provider.reply(run.handle, "a message while it asks")
    with pytest.raises(PromptPending):
        run.provider.interrupt(run.handle)

    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(1,))])
    assert _recorded(gemini_rig) == {"0": "Green"}
    run.wait(lambda r: r.answered("Green it is."), what="the turn after the answer")
    assert run.provider.pending_dialog(run.handle) is None
    assert not [m for m in run.messages if m.is_error], "no warning for an answer recorded as sent"


def test_a_form_of_every_question_shape_is_answered_in_one_go(gemini_rig):
    asked = [
        question("Which color?", "Color", ("Red", "Green")),
        question("Which fruits?", "Fruit", ("Apple", "Pear", "Plum"), multi=True),
        question("Your name?", "Name", kind="text"),
        question("Proceed?", "Go", kind="yesno"),
    ]
    gemini_rig.model.script.add(when("QTOKEN-FORM", ask_user(questions=asked), text("Form received.")))
    run = gemini_rig.start()
    run.provider.reply(run.handle, "QTOKEN-FORM go")
    dialog = _question(run)
    questions = dialog.all_questions
    assert [q.prompt for q in questions] == ["Which color?", "Which fruits?", "Your name?", "Proceed?"]
    assert questions[1].multi and not questions[2].options
    assert [o.label for o in questions[3].options] == ["Yes", "No"]

    run.provider.answer_dialog(
        run.handle,
        dialog,
        [
            Answer(text="Teal, dark"),  # the free-text row of a choice question
            # Toggled out of order, plus free text: a digit pasted there is text, not row 2.
            Answer(choices=(2, 0), text="2"),
            Answer(text="Ada"),
            Answer(choices=(1,)),
        ],
    )
    assert _recorded(gemini_rig) == {"0": "Teal, dark", "1": "Apple, Plum, 2", "2": "Ada", "3": "No"}
    run.wait(lambda r: r.answered("Form received."), what="the turn after the form")
    assert not [m for m in run.messages if m.is_error]


def test_a_declined_question_cancels_the_turn_and_frees_the_run(gemini_rig):
    gemini_rig.model.script.add(when("QTOKEN-DECLINE", ask_user(), text("unused")))
    run = gemini_rig.start()
    run.provider.reply(run.handle, "QTOKEN-DECLINE go")
    dialog = _question(run)
    run.provider.answer_dialog(run.handle, dialog, [])
    run.wait(
        lambda r: "Request cancelled." in r.texts(MessageKind.LIFECYCLE) and r.state == RunState.IDLE,
        what="the cancelled turn",
    )
    assert run.provider.pending_dialog(run.handle) is None
    assert run.provider.blocked_state(run.handle) is None
    gemini_rig.model.script.add(text("Free again."))
    run.provider.reply(run.handle, "are you there")
    run.wait(lambda r: r.answered("Free again."), what="a reply after the decline")


def test_an_answer_recorded_otherwise_is_reported_and_the_chat_warns(gemini_rig, monkeypatch):
    """The backstop: keys that land on another row than lab meant (here a recipe that walks one
    row too far) are no success, and the chat says what was recorded."""
    real = gemini_provider.question_recipe

    def off_by_one(dialog, answers):
        recipe = real(dialog, answers)
        return Recipe((key("Down"), *recipe.ops), recipe.records)

    monkeypatch.setattr(gemini_provider, "question_recipe", off_by_one)
    gemini_rig.model.script.add(when("QTOKEN-MISMATCH", ask_user(), text("Noted.")))
    run = gemini_rig.start()
    run.provider.reply(run.handle, "QTOKEN-MISMATCH go")
    dialog = _question(run)
    with pytest.raises(ReplyNotDelivered) as raised:
        run.provider.answer_dialog(run.handle, dialog, [Answer(choices=(0,))])
    assert str(raised.value) == (
        "Gemini CLI recorded a different answer than lab sent: “Which color do you prefer?”: "
        "lab sent “Red”, recorded “Green”."
    )
    run.wait(lambda r: r.answered("Noted."), what="the turn after the answer")
    warnings = [m.text for m in run.messages if m.is_error and m.kind == MessageKind.LIFECYCLE]
    assert warnings == [str(raised.value)]
