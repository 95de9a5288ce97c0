"""Keystroke recipes for Gemini CLI 0.61.0's question dialog (the `ask_user` tool), as data.

Pure: no Django, no tmux. `question_recipe(dialog, answers)` checks positional answers against
the dialog and returns the key ops with their pacing and what the tool will record; the adapter
plays them. Pinned in compat/gemini/COMPAT.md §7, each rule seen on the live widget:

  * A freshly drawn question opens on row 0; Down moves one row (the list scrolls, the rows stay
    in order): every walk goes downward from row 0, never up.
  * A choice (or yes/no) question's rows are its options, then (multi-select with two options or
    more) "All of the above", then the free-text row ("Enter a custom value"), then (multi-select)
    "Done". Enter on an option answers a single-select question; on a multi-select option it
    toggles it, and Enter on "Done" answers. Text pasted on the free-text row is the answer (and
    checks the row in a multi-select); Enter there answers a single-select question.
  * A text question is the free-text field alone: paste, Enter.
  * With two or more questions every answer moves on to the next question, then a review
    screen whose Enter submits them all.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from providers.errors import DialogNotAnswerable, InvalidReply
from providers.gemini.dialogs import (
    PLAN_AUTO,
    PLAN_FEEDBACK,
    PLAN_KEEP,
    PLAN_MANUAL,
    PLAN_RECORDS,
    QuestionIntent,
    recorded_answer,
)
from providers.sanitize import sanitize_line
from providers.schema import Answer, Dialog, DialogKind, Question

# Pacing, live: keys 0.3 s apart on one screen, 0.8 s after a key that draws another screen
# (the next question, the review), 0.4 s between a paste and the key after it.
KEY_DELAY_S = 0.3
SCREEN_DELAY_S = 0.8
PASTE_DELAY_S = 0.4
ANSWER_MAX_BYTES = 4000


class OpKind(enum.StrEnum):
    KEY = "key"  # a tmux key name
    PASTE = "paste"  # one bracketed paste of sanitized single-line text


@dataclass(frozen=True, slots=True)
class Op:
    kind: OpKind
    value: str
    pause_after: float = KEY_DELAY_S


@dataclass(frozen=True, slots=True)
class Recipe:
    """What to play, and what the tool records when it lands (one string per question)."""

    ops: tuple[Op, ...]
    records: tuple[str, ...]

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


def clean_text(text: str) -> str:
    """Sanitized single-line text, "" when blank. A newline is refused: the field would take
    it as Enter and answer early."""
    if not text.strip():
        return ""
    try:
        return sanitize_line(text, max_bytes=ANSWER_MAX_BYTES).strip()
    except InvalidReply as exc:
        raise DialogNotAnswerable(f"The answer: {exc}") from exc


def validate(question: Question, answer: Answer) -> tuple[tuple[int, ...], str]:
    """(the chosen rows in order, the sanitized text), or DialogNotAnswerable."""
    if len(set(answer.choices)) != len(answer.choices):
        raise DialogNotAnswerable(f"“{question.prompt}”: an option was chosen twice.")
    for i in answer.choices:
        if not 0 <= i < len(question.options):
            raise DialogNotAnswerable(f"“{question.prompt}”: option {i} does not exist.")
    text = clean_text(answer.text)
    if question.multi:
        if not answer.choices and not text:
            raise DialogNotAnswerable(f"“{question.prompt}”: choose at least one option or type an answer.")
        return tuple(sorted(answer.choices)), text
    if not question.options:
        if answer.choices or not text:
            raise DialogNotAnswerable(f"“{question.prompt}”: type an answer.")
        return (), text
    if len(answer.choices) + (1 if text else 0) != 1:
        raise DialogNotAnswerable(f"“{question.prompt}”: choose one option or type an answer.")
    return tuple(answer.choices), text


def question_ops(question: Question, choices: tuple[int, ...], text: str) -> list[Op]:
    """The ops answering one question on its freshly drawn screen (row 0 highlighted); the
    last key draws the next screen."""
    n = len(question.options)
    if not n:
        return [paste(text), key("Enter", SCREEN_DELAY_S)]
    if not question.multi:
        if text:
            return [*downs(n), paste(text), key("Enter", SCREEN_DELAY_S)]
        return [*downs(choices[0]), key("Enter", SCREEN_DELAY_S)]
    free_row = n + (1 if n > 1 else 0)  # after "All of the above"
    ops: list[Op] = []
    row = 0
    for i in choices:
        ops += downs(i - row)
        ops.append(key("Enter"))  # toggles; the cursor stays on the row
        row = i
    if text:
        ops += downs(free_row - row)
        ops.append(paste(text))
        row = free_row
    ops += downs(free_row + 1 - row)  # "Done"
    ops.append(key("Enter", SCREEN_DELAY_S))
    return ops


def question_recipe(dialog: Dialog, answers: Sequence[Answer]) -> Recipe:
    if dialog.kind != DialogKind.QUESTION:
        raise DialogNotAnswerable("That is not a question.")
    questions = dialog.all_questions
    if len(answers) != len(questions):
        raise DialogNotAnswerable("Answer every question.")
    ops: list[Op] = []
    records = []
    for question, answer in zip(questions, answers, strict=True):
        choices, text = validate(question, answer)
        ops += question_ops(question, choices, text)
        records.append(recorded_answer(question, choices, text))
    if len(questions) > 1:
        ops.append(key("Enter", SCREEN_DELAY_S))  # the review screen: submit every answer
    return Recipe(tuple(ops), tuple(records))


def plan_recipe(dialog: Dialog, answers: Sequence[Answer]) -> Recipe | None:
    """§7: the plan dialog is a question drawn with two rows and the feedback field: row 0
    approves into Auto-Edit mode, row 1 into Default mode, text on row 2 rejects with it. None:
    "Reject — keep planning", which is Esc (the turn is cancelled, plan mode stays)."""
    if dialog.kind != DialogKind.PLAN:
        raise DialogNotAnswerable("That is not a plan.")
    if (
        len(answers) != 1
        or len(answers[0].choices) != 1
        or not 0 <= answers[0].choices[0] < len(dialog.options)
    ):
        raise DialogNotAnswerable("Choose one of the plan's options.")
    option = dialog.options[answers[0].choices[0]]
    text = clean_text(answers[0].text)
    if text and not option.takes_text:
        raise DialogNotAnswerable("Feedback goes with “Reject with feedback” only.")
    if option.key == PLAN_KEEP:
        return None
    if option.key == PLAN_AUTO:
        return Recipe((key("Enter", SCREEN_DELAY_S),), (PLAN_RECORDS[PLAN_AUTO],))
    if option.key == PLAN_MANUAL:
        return Recipe((key("Down"), key("Enter", SCREEN_DELAY_S)), (PLAN_RECORDS[PLAN_MANUAL],))
    if option.key == PLAN_FEEDBACK:
        if not text:
            # Enter on the empty field does nothing in the TUI: refused, not sent.
            raise DialogNotAnswerable("Write the feedback for “Reject with feedback”.")
        return Recipe(
            (*downs(2), paste(text), key("Enter", SCREEN_DELAY_S)), (PLAN_RECORDS[PLAN_FEEDBACK] + text,)
        )
    raise DialogNotAnswerable("lab has no recipe for that option; answer it in the terminal.")


def intent_for(dialog: Dialog, recipe: Recipe, at_ns: int) -> QuestionIntent:
    if dialog.kind == DialogKind.PLAN:
        # A plan's header is the file name the call asked about (dialogs.plan_dialog).
        return QuestionIntent(at_ns, (dialog.header,), recipe.records, kind="plan")
    return QuestionIntent(at_ns, tuple(q.prompt for q in dialog.all_questions), recipe.records)
