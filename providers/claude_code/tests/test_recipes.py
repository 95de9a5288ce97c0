"""The dialog recipes as data (compat §7) and the validation that runs before any key is sent."""

from __future__ import annotations

import pytest

from providers.claude_code import recipes
from providers.claude_code.dialogs import PLAN_OPTIONS, approval_dialog
from providers.claude_code.recipes import OpKind, recipe_for
from providers.claude_code.transcript import dialog_for
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
        "Approve — switch to auto mode",
        "Approve — ask before each action",
        "Reject with feedback",
        "Reject — keep planning",
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


# compat §7 "Approvals": the PermissionRequest's suggestions as the live 2.1.328 TUI showed them.
# compat §7: what 2.1.332's PermissionRequest carried for `python3 -c 1`: the exact command, while
# the TUI's row 2 reads "python3 *" and saves Bash(python3 *) (live-verified).
RULE = [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "python3 -c 1"}],
         "behavior": "allow", "destination": "localSettings"}]  # fmt: skip
DIRS = [{"type": "addDirectories", "directories": ["/wt"], "destination": "session"},
        {"type": "setMode", "mode": "acceptEdits", "destination": "session"}]  # fmt: skip
EDITS = [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]


def approval(tool: str, tool_input: dict, suggestions: list) -> Dialog:
    return approval_dialog("toolu_x", tool, tool_input, suggestions)


def keys_for(dialog: Dialog, label_start: str, text: str = "") -> list[str]:
    labels = [o.label for o in dialog.options]
    index = (
        labels.index(label_start)
        if label_start in labels
        else next(i for i, label in enumerate(labels) if label.startswith(label_start))
    )
    return recipe_for(dialog, [Answer(choices=(index,), text=text)]).keys


def test_a_bash_prompt_with_a_rule_offers_dont_ask_again_on_row_1():
    d = approval("Bash", {"command": "python3 -c 1", "description": "Run it"}, RULE)
    assert d.kind == DialogKind.APPROVAL and d.header == "Bash" and d.body == "python3 -c 1"
    assert [o.label for o in d.options] == [
        "Allow once",
        "Allow, and don't ask again for “python3 *”",
        "Deny, and tell Claude what to do differently",
        "Deny",
    ]
    assert d.options[1].description == (
        "Claude Code saves the rule Bash(python3 *) in the repository's .claude/settings.local.json "
        "(in its main checkout), so it applies to every run of this repository."
    )
    assert keys_for(d, "Allow once") == ["Enter"]
    assert keys_for(d, "Allow, and don't") == ["Down", "Enter"]
    assert keys_for(d, "Deny, and", "use printf") == [
        "Down",
        "Down",
        "Down",
        "Tab",
        "paste:use printf",
        "Enter",
    ]
    assert keys_for(d, "Deny") == ["Escape"]


def test_a_bash_prompt_with_a_directory_suggestion_offers_no_always_row():
    # "always allow access to <dir>" did not stop the next identical prompt (live): not offered.
    d = approval("Bash", {"command": "touch x"}, DIRS)
    assert [o.key for o in d.options] == ["allow@0", "deny-feedback@3", "deny"]


def test_write_and_edit_offer_accept_edits_for_the_session_and_feedback_on_row_2():
    w = approval("Write", {"file_path": "/wt/new.txt", "content": "hello\n"}, EDITS)
    assert w.prompt == "Create new.txt (/wt/new.txt)" and w.body == "hello\n"
    assert keys_for(w, "Allow, and accept every edit") == ["Down", "Enter"]
    assert keys_for(w, "Deny, and", "no") == ["Down", "Down", "Tab", "paste:no", "Enter"]
    e = approval("Edit", {"file_path": "/wt/n.txt", "old_string": "beta", "new_string": "BETA"}, EDITS)
    assert e.body.splitlines()[-2:] == ["-beta", "+BETA"]


def test_an_unknown_tool_offers_allow_once_and_deny_only():
    d = approval("mcp__srv__do", {"x": 1}, [])
    assert [o.key for o in d.options] == ["allow@0", "deny"]
    assert d.prompt == "Use the tool mcp__srv__do" and d.body == "x: 1"


def test_approval_feedback_is_required_and_only_on_its_option():
    d = approval("Bash", {"command": "touch x"}, DIRS)
    with pytest.raises(DialogNotAnswerable):
        keys_for(d, "Deny, and", "")
    with pytest.raises(DialogNotAnswerable):
        keys_for(d, "Allow once", "some text")
    with pytest.raises(DialogNotAnswerable):
        keys_for(d, "Deny, and", "two\nlines")


def test_only_bare_key_approval_recipes_are_retry_safe():
    d = approval("Bash", {"command": "python3 -c 1"}, RULE)
    safe = {o.key: recipe_for(d, [Answer(choices=(i,), text="x" if o.takes_text else "")]).retry_safe
            for i, o in enumerate(d.options)}  # fmt: skip
    assert safe == {"allow@0": True, "allow-rule@1": True, "deny-feedback@3": False, "deny": True}


@pytest.mark.parametrize(
    ("suggested", "saved"),
    [
        ("python3 -c 1", "python3 *"),
        ('node -e "x()"', "node *"),
        ("python3 script.py --fast", "python3 *"),
        ("npm test *", "npm test *"),
        ("git commit *", "git commit *"),
    ],
)
def test_the_offered_rule_is_the_one_the_tui_saves_not_the_exact_command(suggested: str, saved: str):
    # compat §7: each pair is what the live 2.1.332 TUI showed and wrote for that suggestion.
    rule = [{**RULE[0], "rules": [{"toolName": "Bash", "ruleContent": suggested}]}]
    d = approval("Bash", {"command": suggested}, rule)
    assert d.options[1].label == f"Allow, and don't ask again for “{saved}”"


def test_a_rule_bound_for_an_unknown_place_is_not_offered():
    d = approval("Bash", {"command": "python3 -c 1"}, [{**RULE[0], "destination": "cliArg"}])
    assert [o.label for o in d.options] == [
        "Allow once",
        "Deny, and tell Claude what to do differently",
        "Deny",
    ]


def test_deny_with_feedback_pastes_the_sanitized_text_not_what_was_typed():
    # A bracketed-paste terminator in the feedback would end the paste and type the rest as keys.
    d = approval("Bash", {"command": "touch x"}, DIRS)
    typed = "  no\x1b[201~\x07 use printf\x9b  "
    (pasted,) = [k for k in keys_for(d, "Deny, and", typed) if k.startswith("paste:")]
    assert pasted == "paste:no[201~ use printf"


def test_without_a_plan_file_only_the_rows_the_cli_shows_are_offered():
    # compat §7 "no plan file": the CLI's 2-row dialog; the page shows what the adapter offers.
    bare = dialog_for("toolu_p", "ExitPlanMode", {})
    assert bare is not None and [o.offered for o in bare.options] == [False, True, False, True]
    planned = dialog_for("toolu_p", "ExitPlanMode", {"plan": "# Plan\n- do it\n"})
    assert planned is not None and all(o.offered for o in planned.options)
