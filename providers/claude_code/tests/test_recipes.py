"""The dialog recipes as data (compat §7) and the validation that runs before any key is sent."""

from __future__ import annotations

import pytest

from providers.claude_code import recipes
from providers.claude_code.dialogs import PLAN_OPTIONS
from providers.claude_code.recipes import OpKind, recipe_for
from providers.errors import DialogNotAnswerable
from providers.schema import Answer, Dialog, DialogKind, Option, Question

RGB = (Option("Red", "r"), Option("Green", "g"), Option("Blue", "b"))
TOPPINGS = tuple(Option(x) for x in ("Cheese", "Ham", "Olives", "Onion"))


def single(**kw: object) -> Dialog:
    return Dialog(tool_use_id="toolu_1", kind=DialogKind.QUESTION, prompt="Color?", options=RGB, **kw)  # type: ignore[arg-type]


def form(*questions: Question) -> Dialog:
    return Dialog(tool_use_id="toolu_2", kind=DialogKind.QUESTION, questions=questions)


def plan(body: str = "# Plan\n\n1. x\n") -> Dialog:
    return Dialog(
        tool_use_id="toolu_3", kind=DialogKind.PLAN, options=PLAN_OPTIONS, free_text=False, body=body
    )


def test_single_option_walks_down_from_row_0_without_climbing():
    assert recipe_for(single(), [Answer(choices=(0,))]).keys == ["Enter"]
    assert recipe_for(single(), [Answer(choices=(2,))]).keys == ["Down", "Down", "Enter"]
    assert "Up" not in recipe_for(single(), [Answer(choices=(2,))]).keys


def test_free_text_is_typed_first_on_the_type_something_row():
    r = recipe_for(single(), [Answer(text="  I prefer purple  ")])
    assert r.keys == ["Down", "Down", "Down", "paste:I prefer purple", "Enter"]
    assert r.name == "free-text" and not r.retry_safe


@pytest.mark.parametrize("text", ["line one\nline two", "a\rb"])
def test_free_text_with_a_newline_is_refused(text):
    with pytest.raises(DialogNotAnswerable):
        recipe_for(single(), [Answer(text=text)])


def test_control_characters_never_reach_the_paste():
    r = recipe_for(single(), [Answer(text="ok\x1b[201~\x07 then")])
    (pasted,) = [op.value for op in r.ops if op.kind == OpKind.PASTE]
    assert "\x1b" not in pasted and "\x07" not in pasted


@pytest.mark.parametrize(
    "answer",
    [
        Answer(),
        Answer(choices=(3,)),
        Answer(choices=(-1,)),
        Answer(choices=(0, 1)),
        Answer(choices=(0,), text="x"),
    ],
)
def test_a_single_select_answer_must_be_exactly_one_thing(answer):
    with pytest.raises(DialogNotAnswerable):
        recipe_for(single(), [answer])


def test_never_enter_on_an_empty_free_text_row():
    # Enter on the empty row declines the whole dialog (compat §2): whitespace is no answer.
    with pytest.raises(DialogNotAnswerable):
        recipe_for(single(), [Answer(text="   ")])


def test_multiselect_toggles_in_order_walks_to_submit_then_submits_the_review():
    d = form(Question("Toppings?", TOPPINGS, multi=True))
    r = recipe_for(d, [Answer(choices=(2, 0))])
    # Cheese (row 0), Olives (row 2), then Submit = row 5 (under "5. Type something"), review Enter.
    assert r.keys == ["Space", "Down", "Down", "Space", "Down", "Down", "Down", "Enter", "Enter"]
    assert r.name == "multi"


def test_multiselect_free_text_row_is_typed_and_auto_checked():
    d = form(Question("Toppings?", TOPPINGS, multi=True))
    r = recipe_for(d, [Answer(choices=(1,), text="extra pineapple")])
    walk = ["Down", "Space", "Down", "Down", "Down", "paste:extra pineapple", "Down", "Enter", "Enter"]
    assert r.keys == walk


def test_multiselect_needs_something_and_no_duplicates():
    d = form(Question("Toppings?", TOPPINGS, multi=True))
    with pytest.raises(DialogNotAnswerable):
        recipe_for(d, [Answer()])
    with pytest.raises(DialogNotAnswerable):
        recipe_for(d, [Answer(choices=(1, 1))])


def test_two_and_three_questions_auto_advance_then_a_bare_enter_on_the_review():
    q1 = Question("Fruit?", (Option("Apple"), Option("Banana")))
    q2 = Question("Drink?", (Option("Tea"), Option("Juice")))
    q3 = Question("Size?", (Option("S"), Option("M"), Option("L")))
    r = recipe_for(form(q1, q2), [Answer(choices=(1,)), Answer(choices=(0,))])
    assert r.keys == ["Down", "Enter", "Enter", "Enter"]  # compat §3: Banana, Tea, Submit answers
    r3 = recipe_for(form(q1, q2, q3), [Answer(choices=(0,)), Answer(text="Water"), Answer(choices=(2,))])
    assert r3.keys == ["Enter", "Down", "Down", "paste:Water", "Enter", "Down", "Down", "Enter", "Enter"]
    assert "Up" not in r3.keys  # [Up][Enter] on the review screen is Cancel
    # Enters that draw a new screen (all but the final commit) wait for it.
    assert all(op.pause_after >= recipes.SCREEN_DELAY_S for op in r.ops[:-1] if op.value == "Enter")


def test_a_form_must_answer_every_question():
    q = Question("Fruit?", (Option("Apple"), Option("Banana")))
    with pytest.raises(DialogNotAnswerable):
        recipe_for(form(q, q), [Answer(choices=(0,))])


def test_a_multiselect_inside_a_form_commits_on_its_next_row_and_advances():
    """compat §4: inside a form the commit row under the free-text row reads "Next" and
    advances like any answer; the review screen's Enter submits the whole form."""
    q = Question("Fruit?", (Option("Apple"), Option("Banana")))
    m = Question("Toppings?", TOPPINGS, multi=True)
    recipe = recipe_for(form(m, q), [Answer(choices=(2, 0)), Answer(choices=(1,))])
    toggles = ["Space", "Down", "Down", "Space"]
    assert recipe.keys == [*toggles, "Down", "Down", "Down", "Enter", "Down", "Enter", "Enter"]
    recipe = recipe_for(form(q, m), [Answer(choices=(0,)), Answer(choices=(1,), text="pineapple")])
    walk = ["Down", "Space", "Down", "Down", "Down", "paste:pineapple", "Down"]
    assert recipe.keys == ["Enter", *walk, "Enter", "Enter"]


def test_plan_label_order_is_lab_stable_order():
    assert [o.label for o in PLAN_OPTIONS] == [
        "Approve — auto-accept edits",
        "Approve — review each edit",
        "Reject with feedback",
        "Reject — refine the plan",
    ]


def test_plan_rows_by_index():
    assert recipe_for(plan(), [Answer(choices=(0,))]).keys == ["Enter"]
    assert recipe_for(plan(), [Answer(choices=(1,))]).keys == ["Down", "Enter"]
    assert recipe_for(plan(), [Answer(choices=(2,), text="add tests")]).keys == [
        "Down",
        "Down",
        "paste:add tests",
        "Enter",
    ]
    assert recipe_for(plan(), [Answer(choices=(3,))]).keys == ["Escape"]


def test_plan_feedback_is_required_single_line_and_only_for_row_2():
    with pytest.raises(DialogNotAnswerable):
        recipe_for(plan(), [Answer(choices=(2,))])  # Enter on the empty row 3 = reject without it
    with pytest.raises(DialogNotAnswerable):
        recipe_for(plan(), [Answer(choices=(2,), text="a\nb")])
    with pytest.raises(DialogNotAnswerable):
        recipe_for(plan(), [Answer(choices=(0,), text="approve but")])
    with pytest.raises(DialogNotAnswerable):
        recipe_for(plan(), [Answer(choices=(4,))])


def test_plan_without_a_plan_file_has_its_own_two_row_recipe():
    empty = plan(body="")
    assert recipe_for(empty, [Answer(choices=(1,))]).keys == ["Enter"]  # "Yes, … default"
    assert recipe_for(empty, [Answer(choices=(3,))]).keys == ["Escape"]
    for refused in (0, 2):
        with pytest.raises(DialogNotAnswerable):
            recipe_for(empty, [Answer(choices=(refused,), text="x" if refused == 2 else "")])


def test_an_empty_answer_list_declines_with_esc():
    r = recipe_for(single(), [])
    assert r.keys == ["Escape"] and r.declines


def test_only_single_screen_bare_key_recipes_are_retry_safe():
    assert recipe_for(single(), [Answer(choices=(1,))]).retry_safe
    assert not recipe_for(single(), [Answer(text="x")]).retry_safe
    assert not recipe_for(form(Question("T?", TOPPINGS, multi=True)), [Answer(choices=(0,))]).retry_safe
    assert recipe_for(plan(), [Answer(choices=(1,))]).retry_safe
    assert not recipe_for(plan(), [Answer(choices=(2,), text="x")]).retry_safe


def test_pacing_constants_are_pinned():
    # compat §7: settle before the first key, then per-key pacing (verified live).
    assert recipes.SETTLE_S == 0.8
    assert 0.25 <= recipes.KEY_DELAY_S <= 0.4
    assert recipes.SCREEN_DELAY_S >= recipes.KEY_DELAY_S


def test_approval_dialogs_are_not_answered():
    with pytest.raises(DialogNotAnswerable):
        recipe_for(Dialog(tool_use_id="t", kind=DialogKind.APPROVAL, prompt="Run?"), [Answer(choices=(0,))])
