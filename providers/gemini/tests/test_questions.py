"""Gemini's question tool (ask_user): the dialog lab shows from BeforeTool's `tool_input`, the
keys its recipe plays and what the tool will record, the fold that holds the run until the call
ends, and the reader's pairing of lab's intent with the recorded call (compat/gemini/COMPAT.md §7)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from providers.errors import DialogNotAnswerable
from providers.gemini.dialogs import (
    PLAN_AUTO,
    PLAN_FEEDBACK,
    PLAN_KEEP,
    PLAN_MANUAL,
    QuestionIntent,
    answer_mismatch,
    plan_dialog,
    question_dialog,
)
from providers.gemini.recipes import plan_recipe, question_recipe
from providers.gemini.spool import fold
from providers.gemini.transcript import read_transcript
from providers.schema import Answer, Cursor, DialogKind, MessageKind
from providers.tui import Asking


def q(text: str, kind: str = "choice", options: tuple[str, ...] = ("Red", "Green", "Blue"), **kw: object):
    out: dict[str, object] = {"question": text, "header": text[:5], "type": kind, **kw}
    if kind == "choice":
        out["options"] = [{"label": o, "description": f"the {o}"} for o in options]
    return out


def dialog(*questions: dict[str, object]):
    d = question_dialog("tool-5", {"questions": list(questions)})
    assert d is not None
    return d


def test_one_question_is_the_flat_shape_with_its_options_and_the_free_text_row() -> None:
    d = dialog(q("Which color?"))
    assert d.kind == DialogKind.QUESTION and d.questions is None
    assert d.prompt == "Which color?" and d.header == "Which"
    assert [(o.label, o.description) for o in d.options] == [
        ("Red", "the Red"),
        ("Green", "the Green"),
        ("Blue", "the Blue"),
    ]
    assert d.free_text and not d.multi


def test_a_form_keeps_each_shape_text_has_no_rows_and_yes_no_is_two() -> None:
    d = dialog(q("A?"), q("B?", multi=True, multiSelect=True), q("C?", "text"), q("D?", "yesno"))
    shapes = [(x.prompt, [o.label for o in x.options], x.multi, x.free_text) for x in d.all_questions]
    assert shapes == [
        ("A?", ["Red", "Green", "Blue"], False, True),
        ("B?", ["Red", "Green", "Blue"], True, True),
        ("C?", [], False, True),
        ("D?", ["Yes", "No"], False, True),
    ]


@pytest.mark.parametrize(
    "questions",
    [
        [],
        [q("A?")] * 5,
        [q("A?", options=("Only",))],
        [q("A?", options=("a", "b", "c", "d", "e"))],
        [q("A?", "slider")],
        [{"header": "no question"}],
    ],
)
def test_a_shape_the_cli_would_not_draw_is_left_to_the_terminal(questions: list[object]) -> None:
    assert question_dialog("tool-5", {"questions": questions}) is None


def test_the_recipe_walks_down_from_row_0_and_knows_what_the_tool_records() -> None:
    one = dialog(q("A?"))
    assert question_recipe(one, [Answer(choices=(2,))]).keys == ["Down", "Down", "Enter"]
    # The free-text row is right under the options.
    free = question_recipe(one, [Answer(text="  Teal  ")])
    assert free.keys == ["Down", "Down", "Down", "paste:Teal", "Enter"]
    assert free.records == ("Teal",)
    # Multi-select: Enter toggles; "All of the above", then the free-text row, then "Done".
    multi = question_recipe(dialog(q("B?", multiSelect=True)), [Answer(choices=(2, 0), text="Kiwi")])
    assert multi.keys == ["Enter", "Down", "Down", "Enter", "Down", "Down", "paste:Kiwi", "Down", "Enter"]
    assert multi.records == ("Red, Blue, Kiwi",)
    text = question_recipe(dialog(q("C?", "text")), [Answer(text="Ada")])
    assert text.keys == ["paste:Ada", "Enter"]


def test_a_form_answers_each_question_then_submits_the_review() -> None:
    form = dialog(q("A?"), q("D?", "yesno"))
    recipe = question_recipe(form, [Answer(choices=(0,)), Answer(choices=(1,))])
    assert recipe.keys == ["Enter", "Down", "Enter", "Enter"]
    assert recipe.records == ("Red", "No")


@pytest.mark.parametrize(
    ("questions", "answers", "why"),
    [
        ([q("A?")], [Answer(choices=(0, 1))], "choose one option"),
        ([q("A?")], [Answer(choices=(0,), text="and text")], "choose one option"),
        ([q("A?")], [Answer(choices=(3,))], "option 3 does not exist"),
        ([q("A?")], [Answer(text="two\nlines")], "The answer"),
        ([q("C?", "text")], [Answer(text="   ")], "type an answer"),
        ([q("B?", multiSelect=True)], [Answer()], "choose at least one"),
        ([q("A?"), q("B?")], [Answer(choices=(0,))], "Answer every question"),
    ],
)
def test_answers_that_do_not_fit_are_refused_before_any_key(questions, answers, why) -> None:
    with pytest.raises(DialogNotAnswerable, match=why):
        question_recipe(dialog(*questions), answers)


ASK_INPUT = {"questions": [q("Which color?")]}


def ev(ns: int, name: str, **payload: object) -> dict[str, object]:
    return {"_spool_name": f"{ns:020d}-1.json", "hook_event_name": name, **payload}


NOTE = ev(
    2, "Notification", notification_type="ToolPermission", details={"type": "ask_user", "title": "Ask User"}
)


def test_the_question_is_pending_from_its_before_tool_and_drawn_at_its_notification() -> None:
    before = ev(1, "BeforeTool", tool_name="ask_user", tool_input=ASK_INPUT)
    early = fold([before])
    assert early.dialog is not None and early.dialog.prompt == "Which color?"
    assert early.pending is not None and early.pending.shown_ns == 0 and not early.blocked
    drawn = fold([before, NOTE])
    assert drawn.pending is not None and drawn.pending.shown_ns == 2 and drawn.pending.seen_ns == 1
    assert fold([before, NOTE, ev(3, "AfterTool", tool_name="ask_user")]).dialog is None
    assert fold([before, NOTE], resolved=frozenset({"tool-1"})).dialog is None


def test_a_question_lab_cannot_read_and_a_plan_hold_the_run_for_the_terminal() -> None:
    odd = ev(1, "BeforeTool", tool_name="ask_user", tool_input={"questions": [q("A?", "slider")]})
    assert fold([odd, NOTE]).dialog is None and fold([odd, NOTE]).blocked
    plan = ev(1, "BeforeTool", tool_name="exit_plan_mode", tool_input={"plan_filename": "p.md"})
    assert fold([plan]).dialog is None and fold([plan]).blocked


def test_an_intent_survives_its_json_and_garbage_is_refused() -> None:
    intent = QuestionIntent(5, ("A?",), ("Red",))
    assert QuestionIntent.from_json(orjson.loads(orjson.dumps(intent.to_json()))) == intent
    for bad in ({}, {"kind": "question", "at_ns": "1", "questions": [], "answers": []}, "allow"):
        with pytest.raises(ValueError):
            QuestionIntent.from_json(bad)
    mismatch = QuestionIntent(5, ("A?", "B?"), ("Red", "Ada"))
    assert answer_mismatch(mismatch, {"0": "Red", "1": "Ada"}) == ""
    assert answer_mismatch(mismatch, {"0": "Red"}) == (
        "Gemini CLI recorded a different answer than lab sent: “B?”: lab sent “Ada”, nothing recorded."
    )
    assert (
        answer_mismatch(mismatch, None) == "Gemini CLI recorded no answer although lab answered the question."
    )


CAPTURED = (
    Path(__file__).parents[3] / "compat" / "gemini" / "fixtures" / "0.61.0" / "question__form_answered.jsonl"
)
QUESTIONS = ("Which color?", "Which fruits?", "Your name?")
# The call's record is stamped 02:32:46.857Z and its result 02:32:53.725Z (2026-12-05).
RECORD_NS = 1_796_437_966_857_000_000
WRONG = ("Red", "Apple, Plum, Kiwi", "Ada")


def warnings(intents: dict[str, object]) -> list[str]:
    read = read_transcript(str(CAPTURED), Cursor(), intents)
    return [m.text for m in read.messages if m.kind == MessageKind.LIFECYCLE and m.is_error]


def test_the_backstop_pairs_an_intent_by_its_questions_and_the_calls_time() -> None:
    at = RECORD_NS + 50_000_000
    assert warnings({f"tool-{at}": QuestionIntent(at, QUESTIONS, WRONG)}) == [
        "Gemini CLI recorded a different answer than lab sent: “Which color?”: lab sent “Red”, "
        "recorded “Green”."
    ]
    # Another question's intent, or one from before the call began: not this call's.
    assert warnings({f"tool-{at}": QuestionIntent(at, ("Which color?",), ("Red",))}) == []
    early = RECORD_NS - 60 * 1_000_000_000
    assert warnings({f"tool-{early}": QuestionIntent(early, QUESTIONS, WRONG)}) == []
    late = RECORD_NS + 60 * 1_000_000_000
    assert warnings({f"tool-{late}": QuestionIntent(late, QUESTIONS, WRONG)}) == []


# --- plans (exit_plan_mode) ----------------------------------------------------------------------


def plan(text: str = "# Plan\n1. go\n"):
    return plan_dialog("tool-7", "feature.md", text)


def test_each_plan_row_has_its_keys_and_what_the_tool_records() -> None:
    d = plan()
    rows = {o.key: i for i, o in enumerate(d.options)}
    assert question_recipe_keys(d, rows[PLAN_AUTO]) == ["Enter"]
    assert question_recipe_keys(d, rows[PLAN_MANUAL]) == ["Down", "Enter"]
    feedback = plan_recipe(d, [Answer(choices=(rows[PLAN_FEEDBACK],), text="more tests")])
    assert feedback is not None and feedback.keys == ["Down", "Down", "paste:more tests", "Enter"]
    assert feedback.records == ("Plan rejected. User feedback: more tests",)
    assert plan_recipe(d, [Answer(choices=(rows[PLAN_KEEP],))]) is None  # Esc
    with pytest.raises(DialogNotAnswerable, match="Write the feedback"):
        plan_recipe(d, [Answer(choices=(rows[PLAN_FEEDBACK],))])
    with pytest.raises(DialogNotAnswerable, match="Feedback goes with"):
        plan_recipe(d, [Answer(choices=(rows[PLAN_MANUAL],), text="and this")])


def question_recipe_keys(d, row: int) -> list[str]:
    recipe = plan_recipe(d, [Answer(choices=(row,))])
    assert recipe is not None
    return recipe.keys


def test_a_plan_is_pending_when_its_file_is_read_and_the_terminals_when_it_is_not() -> None:
    before = ev(1, "BeforeTool", tool_name="exit_plan_mode", tool_input={"plan_filename": "feature.md"})
    shown = fold([before, NOTE], read_plan=lambda e: "# Plan\n")
    assert shown.dialog is not None and shown.dialog.kind == DialogKind.PLAN
    assert shown.dialog.body == "# Plan\n" and shown.dialog.header == "feature.md"
    assert shown.pending is not None and shown.pending.shown_ns == 2
    unread = fold([before, NOTE], read_plan=lambda e: "")
    assert unread.dialog is None and unread.blocked


def test_the_plan_file_is_read_only_inside_the_sessions_plans_folder(settings, tmp_path: Path) -> None:
    from providers.gemini.provider import GeminiProvider

    settings.LAB_AGENT_HOME = str(tmp_path)
    settings.LAB_AGENT_ENV = {}
    project = tmp_path / ".gemini" / "tmp" / "wt"
    (project / "chats").mkdir(parents=True)
    (project / "sid-1" / "plans").mkdir(parents=True)
    (project / "sid-1" / "plans" / "feature.md").write_text("# The plan\n")
    (project / "secret.md").write_text("not a plan")
    session = str(project / "chats" / "session-2026-01-01T00-00-abcd.jsonl")

    def event(name: str, session_id: str = "sid-1", path: str = session) -> dict[str, object]:
        return {"transcript_path": path, "session_id": session_id, "tool_input": {"plan_filename": name}}

    read = GeminiProvider()._read_plan
    assert read(event("feature.md")) == "# The plan\n"
    assert read(event("../../secret.md")) == ""
    assert read(event(str(project / "secret.md"))) == ""
    assert read(event("feature.md", session_id="../sid-1")) == ""
    assert read(event("feature.md", path=str(tmp_path / "elsewhere" / "chats" / "session-x.jsonl"))) == ""


def test_a_refusal_names_what_the_terminal_asks(tmp_path: Path) -> None:
    from providers.gemini.provider import GeminiProvider
    from providers.schema import RunHandle

    run = RunHandle(run_id=1, worktree=str(tmp_path), tmux_socket="s", tmux_session="t")
    provider = GeminiProvider()
    odd = ev(1, "BeforeTool", tool_name="ask_user", tool_input={"questions": [q("A?", "slider")]})
    assert provider.asking(run, fold([odd, NOTE])) == Asking("a question")
    plan_ = ev(1, "BeforeTool", tool_name="exit_plan_mode", tool_input={"plan_filename": "p.md"})
    assert provider.asking(run, fold([plan_])) == Asking("for approval of a plan")
    assert provider.asking(
        run, fold([ev(1, "BeforeTool", tool_name="ask_user", tool_input=ASK_INPUT)])
    ) == Asking("a question", "answer or decline it")


def test_an_answer_waits_for_the_question_to_be_drawn_and_sends_nothing_if_it_never_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from providers.errors import ReplyNotDelivered
    from providers.gemini import provider as gemini_provider
    from providers.schema import RunHandle
    from providers.tui import AnswerPlan

    spool = tmp_path / "spool"
    spool.mkdir()
    payload = {"hook_event_name": "BeforeTool", "tool_name": "ask_user", "tool_input": ASK_INPUT}
    (spool / f"{1:020d}-1.json").write_bytes(orjson.dumps(payload))
    run = RunHandle(run_id=1, worktree=str(tmp_path), tmux_socket="s", tmux_session="t", spool_dir=str(spool))
    provider = gemini_provider.GeminiProvider()
    pending = provider.pending_dialog(run)
    assert pending is not None and pending.kind == DialogKind.QUESTION
    monkeypatch.setattr(gemini_provider, "SHOWN_TIMEOUT_S", 0.2)
    with pytest.raises(ReplyNotDelivered, match="has not shown the question yet, so lab sent nothing"):
        provider.await_shown(run, None, pending, AnswerPlan(keys=None))  # type: ignore[arg-type]
