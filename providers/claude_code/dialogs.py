"""Claude Code's dialogs as lab sees them: the stable plan labels, and answer intents.

No Django. The plan picker's own row texts drift (compat §5: row 1 reads "Yes, and use auto
mode" or "Yes, and switch to BYPASS PERMISSIONS …"), so lab shows these semantic labels and
couples each to a row index, never to the TUI's text.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from providers.schema import Answer, Dialog, DialogKind, Option

PLAN_APPROVE_AUTO = "Approve — auto-accept edits"  # compat §5 row 1
PLAN_APPROVE_MANUAL = "Approve — review each edit"  # compat §5 row 2
PLAN_REJECT_FEEDBACK = "Reject with feedback"  # compat §5 row 3 + typed feedback
PLAN_REJECT_REFINE = "Reject — refine the plan"  # compat §5 Esc: rejected, no feedback

PLAN_OPTIONS: tuple[Option, ...] = (
    Option(PLAN_APPROVE_AUTO),
    Option(PLAN_APPROVE_MANUAL),
    Option(PLAN_REJECT_FEEDBACK),
    Option(PLAN_REJECT_REFINE),
)

ASK_TOOL = "AskUserQuestion"
PLAN_TOOL = "ExitPlanMode"


class PlanDecision(enum.StrEnum):
    APPROVE = "approve"
    REJECT = "reject"


@dataclass(frozen=True, slots=True)
class Intent:
    """What lab meant to answer, recorded by answer_dialog and checked when the result lands.

    `answers` pairs each question's text with the expected outcome: a frozenset of labels for a
    multi-select (free text counts as one more label, compat §4), else the chosen label or the
    free text. A plan carries `plan_decision` and, for a rejection with feedback, `feedback`.
    """

    tool_use_id: str
    kind: DialogKind
    answers: tuple[tuple[str, str | frozenset[str]], ...] = ()
    plan_decision: PlanDecision | None = None
    feedback: str = ""


def intent_for(dialog: Dialog, answers: Sequence[Answer]) -> Intent:
    """The intent of positional `answers` to `dialog` (answers[i] answers all_questions[i])."""
    if dialog.kind == DialogKind.PLAN:
        choice = answers[0].choices[0] if answers and answers[0].choices else 0
        if choice in (0, 1):
            return Intent(dialog.tool_use_id, dialog.kind, plan_decision=PlanDecision.APPROVE)
        feedback = answers[0].text.strip() if choice == 2 and answers else ""
        return Intent(dialog.tool_use_id, dialog.kind, plan_decision=PlanDecision.REJECT, feedback=feedback)
    expected: list[tuple[str, str | frozenset[str]]] = []
    for question, answer in zip(dialog.all_questions, answers, strict=False):
        labels = [question.options[i].label for i in answer.choices if i < len(question.options)]
        if question.multi:
            extra = [answer.text.strip()] if answer.text.strip() else []
            expected.append((question.prompt, frozenset(labels + extra)))
        else:
            expected.append((question.prompt, labels[0] if labels else answer.text.strip()))
    return Intent(dialog.tool_use_id, dialog.kind, answers=tuple(expected))
