"""Keystroke recipes for Claude Code 2.1.328's pickers, as data (compat §7).

Pure: no Django, no tmux. `recipe_for(dialog, answers)` validates positional answers against
the dialog and returns the key ops with their pacing; the adapter plays them. Every fact used
here is pinned in compat/claude_code/COMPAT-dialogs.md §7 and names the live test that proves it.

Rules the recipes keep (compat §7):
  * No climb. A freshly drawn picker opens on row 0 and Up wraps (row 0 → the free-text row; on
    the review screen "Submit answers" → "Cancel"), so every walk is downward from row 0.
  * Type first. Enter on the empty "Type something." row declines the whole dialog, so free
    text is pasted onto that row before the Enter; an empty text is refused, never sent.
  * Enter on a multi-select option row toggles (like Space) and never commits: the commit is
    the unnumbered row under the free-text row ("Submit" alone, "Next" inside a form, where it
    advances like any answer), then "Submit answers" on the review screen.
  * A form of 2–4 questions auto-advances after each answer, then shows the review screen,
    whose row 0 is "Submit answers": a bare Enter, never [Up][Enter] (that is Cancel).
  * Plan rows by index, never by the drifting row text (compat §5).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from providers.claude_code.dialogs import DENY, PLAN_OPTIONS
from providers.errors import DialogNotAnswerable, InvalidReply
from providers.sanitize import sanitize_line
from providers.schema import Answer, Dialog, DialogKind, Question

# --- pinned pacing (compat §7 "pacing"; NOTES-live: keys sent on the picker's first paint are
# dropped 3/3, right after the tool_use is in the transcript 3/5, after a 0.3–1 s settle 0/9) --
SETTLE_S = 0.8  # after the newest sign of the picker (hook or transcript), before the first key
KEY_DELAY_S = 0.3  # between keys on one screen
SCREEN_DELAY_S = 0.8  # after a key that draws a new screen (auto-advance, the review screen)
PASTE_DELAY_S = 0.4  # between a paste and the Enter that submits it (compat §6 reply pacing)

ANSWER_MAX_BYTES = 4000  # one free-text answer or plan feedback


class OpKind(enum.StrEnum):
    KEY = "key"  # a tmux key name (Down, Enter, Space, Escape)
    PASTE = "paste"  # one bracketed paste of sanitized single-line text


@dataclass(frozen=True, slots=True)
class Op:
    kind: OpKind
    value: str
    pause_after: float = KEY_DELAY_S


@dataclass(frozen=True, slots=True)
class Recipe:
    """What to play. `retry_safe`: the whole recipe may be sent once more when nothing at all
    was recorded (see ClaudeCodeProvider.answer_dialog): true only for a single screen of bare
    keys ending in the one key that commits, where a drop can only have been total."""

    name: str
    ops: tuple[Op, ...]
    settle: float = SETTLE_S
    retry_safe: bool = False
    declines: bool = False  # Esc: no intent is recorded for the backstop

    @property
    def keys(self) -> list[str]:
        """The ops as a flat list, e.g. ['Down', 'Enter', 'paste:text'] (tests, logs)."""
        return [op.value if op.kind == OpKind.KEY else f"paste:{op.value}" for op in self.ops]


def key(name: str, pause: float = KEY_DELAY_S) -> Op:
    return Op(OpKind.KEY, name, pause)


def paste(text: str) -> Op:
    return Op(OpKind.PASTE, text, PASTE_DELAY_S)


def downs(n: int) -> list[Op]:
    return [key("Down") for _ in range(n)]


# --- plan (compat §5, §7) ------------------------------------------------------------------

PLAN_APPROVE_AUTO, PLAN_APPROVE_MANUAL, PLAN_REJECT_FEEDBACK, PLAN_REJECT_REFINE = range(4)
assert len(PLAN_OPTIONS) == 4  # lab's stable labels, in this index order (dialogs.py)


def has_plan(dialog: Dialog) -> bool:
    """compat §5: the 3-row plan picker appears only when input.plan is non-null; without a plan
    file the CLI shows a 2-row "Exit plan mode?" dialog (Yes → default mode / No)."""
    return bool(dialog.body.strip())


def plan_recipe(dialog: Dialog, answer: Answer) -> Recipe:
    if len(answer.choices) != 1:
        raise DialogNotAnswerable("Choose one of the plan's options.")
    choice = answer.choices[0]
    if not 0 <= choice < len(PLAN_OPTIONS):
        raise DialogNotAnswerable("That is not one of the plan's options.")
    if choice != PLAN_REJECT_FEEDBACK and answer.text.strip():
        raise DialogNotAnswerable("Feedback goes with “Reject with feedback” only.")
    if not has_plan(dialog):
        # compat §7 "no plan file": row 0 approves into default (ask-each-time) mode, which is
        # lab's "ask before each action"; there is neither an auto-mode row nor a feedback row.
        if choice == PLAN_APPROVE_MANUAL:
            return Recipe("plan-noplan-approve", (key("Enter"),), retry_safe=True)
        if choice == PLAN_REJECT_REFINE:
            return Recipe("plan-noplan-reject", (key("Escape"),), retry_safe=True)
        raise DialogNotAnswerable(
            "Without a plan file this dialog only offers “Approve — ask before each action” "
            "or “Reject — keep planning”."
        )
    if choice in (PLAN_APPROVE_AUTO, PLAN_APPROVE_MANUAL):
        return Recipe(f"plan-approve-row{choice}", (*downs(choice), key("Enter")), retry_safe=True)
    if choice == PLAN_REJECT_REFINE:
        return Recipe("plan-reject", (key("Escape"),), retry_safe=True)
    text = clean_text(answer.text, what="feedback")
    if not text:
        # Enter on the empty row 3 would reject *without* feedback (compat §5): refuse it.
        raise DialogNotAnswerable("Write the feedback for “Reject with feedback”.")
    return Recipe("plan-reject-feedback", (*downs(2), paste(text), key("Enter")))


# --- tool permissions (compat §7 "Approvals") ---------------------------------------------


def approval_recipe(dialog: Dialog, answer: Answer) -> Recipe:
    """Each option's key names its row (dialogs.approval_dialog). A fresh permission prompt
    opens on row 0 ("1. Yes"): allow rows are `Down×row, Enter`; Esc denies; the "No" row
    takes feedback after Tab ("Tab to amend" turns it into "No, and tell Claude what to do
    differently"), then the text and Enter."""
    if len(answer.choices) != 1 or not 0 <= answer.choices[0] < len(dialog.options):
        raise DialogNotAnswerable("Choose one of the options.")
    option = dialog.options[answer.choices[0]]
    if not option.takes_text and answer.text.strip():
        raise DialogNotAnswerable(f"Feedback goes with “{next_feedback_label(dialog)}” only.")
    if option.key == DENY:
        return Recipe("approval-deny", (key("Escape"),), retry_safe=True)
    action, _, row_text = option.key.partition("@")
    if not row_text.isdigit():
        raise DialogNotAnswerable("lab has no recipe for that option; answer it in the terminal.")
    row = int(row_text)
    if option.takes_text:
        text = clean_text(answer.text, what="feedback")
        if not text:
            raise DialogNotAnswerable(f"Write what to do differently for “{option.label}”.")
        # Tab redraws the row as a text field: the screen pause before typing into it.
        return Recipe(
            f"approval-{action}", (*downs(row), key("Tab", SCREEN_DELAY_S), paste(text), key("Enter"))
        )
    return Recipe(f"approval-{action}", (*downs(row), key("Enter")), retry_safe=True)


def next_feedback_label(dialog: Dialog) -> str:
    return next((o.label for o in dialog.options if o.takes_text), "the feedback option")


# --- questions (compat §2–§4, §7) ----------------------------------------------------------


def clean_text(text: str, *, what: str = "answer") -> str:
    """Sanitized single-line text, "" when blank. Newlines are refused: one would submit early."""
    if not text.strip():
        return ""
    try:
        return sanitize_line(text, max_bytes=ANSWER_MAX_BYTES)
    except InvalidReply as exc:
        raise DialogNotAnswerable(f"The {what}: {exc}") from exc


def validate(question: Question, answer: Answer) -> tuple[tuple[int, ...], str]:
    """(choices in toggle order, sanitized text) for one question, or DialogNotAnswerable."""
    n = len(question.options)
    if len(set(answer.choices)) != len(answer.choices):
        raise DialogNotAnswerable("An option was chosen twice.")
    for i in answer.choices:
        if not 0 <= i < n:
            raise DialogNotAnswerable(f"“{question.prompt}”: option {i} does not exist.")
    text = clean_text(answer.text)
    if text and not question.free_text:
        raise DialogNotAnswerable(f"“{question.prompt}” takes no free-text answer.")
    if question.multi:
        if not answer.choices and not text:
            raise DialogNotAnswerable(f"“{question.prompt}”: choose at least one option.")
        # Walking downward only (no climb): toggle in option order. The recorded order is the
        # toggle order (compat §4); the backstop compares multi-select answers as sets.
        return tuple(sorted(answer.choices)), text
    if len(answer.choices) + (1 if text else 0) != 1:
        raise DialogNotAnswerable(f"“{question.prompt}”: choose one option or type an answer.")
    return tuple(answer.choices), text


def question_ops(
    question: Question, choices: tuple[int, ...], text: str, *, last_screen_key: float
) -> list[Op]:
    """The ops answering one question on a freshly drawn picker (cursor on row 0)."""
    n = len(question.options)
    free_row = n  # compat §2: "N+1. Type something." right under the options
    if not question.multi:
        if text:
            return [*downs(free_row), paste(text), key("Enter", last_screen_key)]
        return [*downs(choices[0]), key("Enter", last_screen_key)]
    ops: list[Op] = []
    row = 0
    for i in choices:
        ops += downs(i - row)
        ops.append(key("Space"))  # compat §4: Space toggles; the cursor stays on the row
        row = i
    if text:
        ops += downs(free_row - row)
        ops.append(paste(text))  # compat §4: typing into the row auto-checks it
        row = free_row
    # compat §4: the unnumbered commit row below the free-text row ("Submit"; "Next" in a form)
    ops += downs(free_row + 1 - row)
    ops.append(key("Enter", last_screen_key))
    return ops


def question_recipe(dialog: Dialog, answers: Sequence[Answer]) -> Recipe:
    questions = dialog.all_questions
    if not 1 <= len(questions) <= 4:
        raise DialogNotAnswerable("Claude Code asks 1–4 questions at a time.")
    if len(answers) != len(questions):
        raise DialogNotAnswerable("Answer every question.")
    checked = [validate(q, a) for q, a in zip(questions, answers, strict=True)]
    ops: list[Op] = []
    for q, (choices, text) in zip(questions, checked, strict=True):
        # Every answer that leaves the screen (auto-advance, review) gets the screen pause.
        ops += question_ops(q, choices, text, last_screen_key=SCREEN_DELAY_S)
    review = len(questions) > 1 or questions[0].multi
    if review:
        ops.append(key("Enter"))  # compat §3/§4: the review screen opens on "Submit answers"
    only = questions[0]
    single_bare = len(questions) == 1 and not only.multi and not checked[0][1]
    name = f"questions-{len(questions)}" if len(questions) > 1 else ("multi" if only.multi else "single")
    if checked[0][1] and len(questions) == 1 and not only.multi:
        name = "free-text"
    return Recipe(name, tuple(ops), retry_safe=single_bare)


def decline_recipe() -> Recipe:
    """compat §2: Esc on a picker declines it ("User rejected tool use")."""
    return Recipe("decline", (key("Escape"),), retry_safe=True, declines=True)


def recipe_for(dialog: Dialog, answers: Sequence[Answer]) -> Recipe:
    """The recipe answering `dialog`; an empty `answers` declines. Raises DialogNotAnswerable
    (nothing is sent) when the answers do not fit the dialog."""
    if not answers:
        return decline_recipe()
    if dialog.kind == DialogKind.PLAN:
        if len(answers) != 1:
            raise DialogNotAnswerable("A plan takes one answer.")
        return plan_recipe(dialog, answers[0])
    if dialog.kind == DialogKind.QUESTION:
        return question_recipe(dialog, answers)
    if dialog.kind == DialogKind.APPROVAL:
        if len(answers) != 1:
            raise DialogNotAnswerable("A permission prompt takes one answer.")
        return approval_recipe(dialog, answers[0])
    raise DialogNotAnswerable("lab does not answer this kind of dialog; attach to the terminal.")


def normalized_answers(dialog: Dialog, answers: Sequence[Answer]) -> list[Answer]:
    """The answers as they will be sent (sanitized text), for the backstop's intent."""
    if dialog.kind != DialogKind.QUESTION:
        return [Answer(choices=a.choices, text=clean_text(a.text, what="feedback")) for a in answers]
    out = []
    for q, a in zip(dialog.all_questions, answers, strict=True):
        choices, text = validate(q, a)
        out.append(Answer(choices=choices, text=text))
    return out
