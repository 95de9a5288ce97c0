"""Gemini CLI 0.61.0's tool confirmation as lab's APPROVAL Dialog, and the keys that answer it;
its question tool (`ask_user`) as a QUESTION Dialog and its plan approval (`exit_plan_mode`) as
a PLAN Dialog, and what lab means to answer them (the intent the result is checked against).
No Django. Pinned in compat/gemini/COMPAT.md §7.

The confirmation's rows differ by the call's type (exec, edit, mcp, info), by folder trust, by
settings and by what the call touches (a build file, untrusted flags): a row's position is not a
fact lab can know from the hooks. Two rows hold whatever the case: "Allow once" is always the
first (its digit, 1, picks it), and "No, suggest changes (esc)" is always the last and is Esc,
which cancels the whole batch of pending calls and ends the turn. lab offers those two, chosen
by label; the rows in between ("Allow for this session", "Modify with external editor", …) are
left to the terminal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from providers.schema import Answer, Dialog, DialogKind, KeyChoice, Option, Question, key_choice

ALLOW, DENY = "allow", "deny"
# §7: the key that plays each row (tmux key names): the digit of the first row, and Esc.
KEYS = {ALLOW: "1", DENY: "Escape"}
OPTIONS = (
    Option(label="Allow once", key=ALLOW, preferred=True),
    Option(
        label="No, suggest changes",
        description="Cancels the call and ends the turn; your text, if any, is sent as the next message.",
        takes_text=True,
        key=DENY,
        denies=True,
    ),
)
# §7: what each confirmation type asks, as the page words it.
PROMPTS = {
    "exec": "Run a shell command",
    "edit": "Change a file",
    "mcp": "Call a tool of an MCP server",
    "info": "Fetch information",
}


def approval_dialog(dialog_id: str, tool_name: str, details: Mapping[str, object]) -> Dialog:
    """The Notification{ToolPermission}'s details as a dialog: the command (exec), the file and
    its diff (edit), the server and tool (mcp)."""
    kind = details.get("type")
    prompt = PROMPTS.get(kind, "Use a tool") if isinstance(kind, str) else "Use a tool"
    body = ""
    if kind == "exec":
        body = _s(details.get("command"))
    elif kind == "edit":
        body = "\n".join(
            x
            for x in (_s(details.get("filePath")) or _s(details.get("fileName")), _s(details.get("fileDiff")))
            if x
        )
    elif kind == "mcp":
        body = f"{_s(details.get('serverName'))} {_s(details.get('toolName'))}".strip()
    else:
        body = _s(details.get("prompt")) or _s(details.get("title"))
    return Dialog(
        tool_use_id=dialog_id,
        kind=DialogKind.APPROVAL,
        prompt=prompt,
        header=tool_name,
        body=body,
        options=OPTIONS,
        free_text=False,
    )


Choice = KeyChoice


def choice_for(dialog: Dialog, answers: Sequence[Answer]) -> Choice:
    """The one option an approval's answer names; an empty answer declines."""
    return key_choice(
        dialog, answers, keys=KEYS, deny=DENY, not_approval="lab answers only Gemini's tool confirmations."
    )


def _s(value: object) -> str:
    return value if isinstance(value, str) else ""


def _unescape(text: str) -> str:
    """§7: the tool turns a literal backslash-n the model wrote into a newline before drawing."""
    return text.replace("\\r\\n", "\n").replace("\\n", "\n")


# --- questions (ask_user, §7) ------------------------------------------------------------------

ASK_TOOL = "ask_user"
# §7: the tool takes 1-4 questions; a choice question 2-4 options (the CLI refuses the call
# otherwise). A yes/no question is drawn as the two rows "Yes" and "No".
MAX_QUESTIONS, MIN_OPTIONS, MAX_OPTIONS = 4, 2, 4
YES_NO = (Option(label="Yes"), Option(label="No"))
CHOICE, TEXT, YESNO = "choice", "text", "yesno"


def question_kind(raw: Mapping[str, Any]) -> str:
    kind = raw.get("type", CHOICE)
    return kind if isinstance(kind, str) else ""


def question_dialog(dialog_id: str, tool_input: Mapping[str, Any]) -> Dialog | None:
    """BeforeTool's `tool_input` of an ask_user call as a dialog; None for a shape lab has no
    recipe for (the terminal answers it). Every choice and yes/no question has the CLI's
    free-text row ("Enter a custom value"); a text question is that row alone."""
    raw = tool_input.get("questions")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_QUESTIONS:
        return None
    questions = []
    for q in raw:
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            return None
        kind = question_kind(q)
        options: tuple[Option, ...] = ()
        multi = False
        if kind == CHOICE:
            opts = q.get("options")
            if not isinstance(opts, list) or not MIN_OPTIONS <= len(opts) <= MAX_OPTIONS:
                return None
            if not all(isinstance(o, dict) and isinstance(o.get("label"), str) for o in opts):
                return None
            options = tuple(
                Option(label=_unescape(o["label"]), description=_unescape(_s(o.get("description")).strip()))
                for o in opts
            )
            multi = q.get("multiSelect") is True
        elif kind == YESNO:
            options = YES_NO
        elif kind != TEXT:
            return None
        questions.append(
            Question(
                prompt=_unescape(q["question"]),
                options=options,
                multi=multi,
                header=_unescape(_s(q.get("header"))),
                free_text=True,
            )
        )
    if len(questions) > 1:
        return Dialog(tool_use_id=dialog_id, kind=DialogKind.QUESTION, questions=tuple(questions))
    only = questions[0]
    return Dialog(
        tool_use_id=dialog_id,
        kind=DialogKind.QUESTION,
        prompt=only.prompt,
        options=only.options,
        multi=only.multi,
        header=only.header,
        free_text=True,
    )


@dataclass(frozen=True, slots=True)
class QuestionIntent:
    """What lab answered to an ask_user dialog: the time its call began (the BeforeTool hook's,
    ns), the questions as asked, and the string the tool records for each (§7: a chosen row's
    label; the free text, trimmed; a multi-select's labels in the options' order, the free text
    last, joined by ", "). For a plan (`kind` "plan"): the plan's file name as asked, and how
    the tool's output begins for the row lab played."""

    at_ns: int
    questions: tuple[str, ...]
    answers: tuple[str, ...]
    kind: str = "question"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "at_ns": self.at_ns,
            "questions": list(self.questions),
            "answers": list(self.answers),
        }

    @classmethod
    def from_json(cls, data: Any) -> QuestionIntent:
        """ValueError for anything to_json did not write."""
        if not isinstance(data, dict) or data.get("kind") not in ("question", "plan"):
            raise ValueError("not a question intent")
        at, questions, answers = data.get("at_ns"), data.get("questions"), data.get("answers")
        if not isinstance(at, int) or not isinstance(questions, list) or not isinstance(answers, list):
            raise ValueError("not a question intent")
        if len(questions) != len(answers) or not all(isinstance(x, str) for x in [*questions, *answers]):
            raise ValueError("not a question intent")
        return cls(at, tuple(questions), tuple(answers), str(data["kind"]))


def recorded_answer(question: Question, choices: Sequence[int], text: str) -> str:
    """The string the CLI records for one question answered with `choices` and `text` (§7)."""
    labels = [o.label for i, o in enumerate(question.options) if i in choices]
    return ", ".join([*labels, text] if text else labels)


def answers_in(output: object) -> dict[str, str] | None:
    """The answers an ask_user call recorded (`{"answers": {"0": …}}`, its output as JSON);
    None when it recorded none (dismissed, an error)."""
    if not isinstance(output, str):
        return None
    try:
        data = json.loads(output)
    except ValueError:
        return None
    answers = data.get("answers") if isinstance(data, dict) else None
    if not isinstance(answers, dict):
        return None
    return {str(k): v for k, v in answers.items() if isinstance(v, str)}


def answer_mismatch(intent: QuestionIntent, recorded: Mapping[str, str] | None) -> str:
    """What differs between the answers lab sent and those the CLI recorded ("" if nothing)."""
    if recorded is None:
        return "Gemini CLI recorded no answer although lab answered the question."
    problems = []
    for index, (prompt, wanted) in enumerate(zip(intent.questions, intent.answers, strict=True)):
        got = recorded.get(str(index))
        if got is None:
            problems.append(f"“{prompt}”: lab sent “{wanted}”, nothing recorded")
        elif got.strip() != wanted:
            problems.append(f"“{prompt}”: lab sent “{wanted}”, recorded “{got}”")
    if not problems:
        return ""
    return "Gemini CLI recorded a different answer than lab sent: " + "; ".join(problems) + "."


# --- plan approval (exit_plan_mode, §7) --------------------------------------------------------

PLAN_TOOL = "exit_plan_mode"
PLAN_AUTO, PLAN_MANUAL, PLAN_FEEDBACK, PLAN_KEEP = "plan-auto", "plan-manual", "plan-feedback", "plan-keep"
# §7: the dialog's rows are "Yes, automatically accept edits", "Yes, manually accept edits" and
# the feedback field; Esc cancels the turn and stays in plan mode. lab labels each by what the
# CLI does after it.
PLAN_OPTIONS = (
    Option(
        "Approve — edit files without asking",
        "Gemini CLI switches to Auto-Edit mode: edits are applied without asking; commands still ask.",
        key=PLAN_AUTO,
    ),
    Option(
        "Approve — ask before each edit",
        "Gemini CLI switches to Default mode: every edit and command asks first.",
        key=PLAN_MANUAL,
        preferred=True,
    ),
    Option(
        "Reject with feedback",
        "It stays in plan mode and revises the plan.",
        takes_text=True,
        needs_text=True,
        key=PLAN_FEEDBACK,
    ),
    Option("Reject — keep planning", "Cancels the turn; it stays in plan mode.", key=PLAN_KEEP, denies=True),
)
# §7: how the tool's output begins after each row.
PLAN_RECORDS = {
    PLAN_AUTO: "Plan approved. Switching to Auto-Edit mode",
    PLAN_MANUAL: "Plan approved. Switching to Default mode",
    PLAN_FEEDBACK: "Plan rejected. User feedback: ",
}


def plan_dialog(dialog_id: str, plan_file: str, plan: str) -> Dialog:
    """The plan's Markdown (the file the call names, as the dialog shows it) and lab's rows;
    the header is the file's name as the call gave it."""
    return Dialog(
        tool_use_id=dialog_id,
        kind=DialogKind.PLAN,
        prompt="Ready to start implementation?",
        header=plan_file,
        body=plan,
        options=PLAN_OPTIONS,
        free_text=False,
    )


def plan_mismatch(intent: QuestionIntent, output: str) -> str:
    wanted = intent.answers[0] if intent.answers else ""
    if output.startswith(wanted):
        return ""
    what = {v: k for k, v in PLAN_RECORDS.items()}.get(wanted)
    sent = next((o.label for o in PLAN_OPTIONS if o.key == what), "feedback")
    if what is None and wanted.startswith(PLAN_RECORDS[PLAN_FEEDBACK]):
        sent = "Reject with feedback"
    first = output.strip().splitlines()[0] if output.strip() else "nothing"
    return f"Gemini CLI recorded a different answer to the plan than lab sent (“{sent}”): {first}"


def result_mismatch(intent: QuestionIntent, output: object) -> str:
    """What differs between lab's answer and the call's recorded output ("" if nothing)."""
    if intent.kind == "plan":
        return plan_mismatch(intent, output if isinstance(output, str) else "")
    return answer_mismatch(intent, answers_in(output))
