"""Claude Code's dialogs as lab sees them: the stable plan labels, the tool-permission
prompts (approvals) and answer intents.

No Django. The plan picker's own row texts drift (compat §5: row 1 reads "Yes, and use auto
mode" or "Yes, and switch to BYPASS PERMISSIONS …"), so lab shows these semantic labels and
couples each to a row index, never to the TUI's text. A permission prompt's rows depend on the
tool and on the suggestions its PermissionRequest hook carries (compat §7 "Approvals"): lab
offers the rows pinned for that shape, each labelled by what it does, keyed by its row.
"""

from __future__ import annotations

import difflib
import enum
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from providers.schema import Answer, Dialog, DialogKind, Option

# Labelled by what the CLI does after each row, re-derived from the live 2.1.328 picker and
# checked by the permission mode each one leaves (compat §7, test_live_dialogs.py plan rows).
PLAN_APPROVE_AUTO = "Approve — switch to auto mode"  # row 1 "Yes, and use auto mode"
PLAN_APPROVE_MANUAL = "Approve — ask before each action"  # row 2 "Yes, manually approve edits"
PLAN_REJECT_FEEDBACK = "Reject with feedback"  # row 3 "Tell Claude what to change" + text
PLAN_REJECT_REFINE = "Reject — keep planning"  # Esc: rejected, no feedback, still in plan mode

# The permission mode each plan row leaves the session in (live-verified per row; the
# backstop checks the approvals against the transcript's auto_mode attachment).
PLAN_LEAVES_MODE = ("auto", "default", "plan", "plan")

PLAN_OPTIONS: tuple[Option, ...] = (
    Option(PLAN_APPROVE_AUTO, "Claude Code runs its actions without asking you (auto mode)."),
    Option(
        PLAN_APPROVE_MANUAL,
        "Claude Code asks you before each edit and command (manual mode).",
        preferred=True,
    ),
    Option(
        PLAN_REJECT_FEEDBACK, "It stays in plan mode and revises the plan.", takes_text=True, needs_text=True
    ),
    Option(PLAN_REJECT_REFINE, "It stays in plan mode."),
)
# compat §7 "no plan file": a 2-row "Exit plan mode?" dialog (Yes → ask before each action / No):
# no auto-mode row and no feedback row (recipes.plan_recipe refuses those indexes then).
NO_PLAN_OPTIONS: tuple[Option, ...] = tuple(
    replace(option, offered=False) if i in (0, 2) else option for i, option in enumerate(PLAN_OPTIONS)
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
    free text. A plan or an approval carries `plan_decision` (approve = allow) and, for a
    rejection with feedback, `feedback`.
    """

    tool_use_id: str
    kind: DialogKind
    answers: tuple[tuple[str, str | frozenset[str]], ...] = ()
    plan_decision: PlanDecision | None = None
    feedback: str = ""
    plan_mode: str = ""  # an approved plan: the permission mode it must leave ("auto", "default")


def intent_to_json(intent: Intent) -> dict[str, Any]:
    """An intent as JSON, for the backstop's store every lab worker reads (providers/tui.py)."""
    return {
        "tool_use_id": intent.tool_use_id,
        "kind": str(intent.kind),
        "answers": [
            [prompt, sorted(want) if isinstance(want, frozenset) else want, isinstance(want, frozenset)]
            for prompt, want in intent.answers
        ],
        "plan_decision": str(intent.plan_decision) if intent.plan_decision else "",
        "feedback": intent.feedback,
        "plan_mode": intent.plan_mode,
    }


def intent_from_json(data: Mapping[str, Any]) -> Intent:
    """intent_to_json's inverse; ValueError/TypeError/KeyError for what it did not write."""
    answers = tuple(
        (str(prompt), frozenset(str(w) for w in want) if multi else str(want))
        for prompt, want, multi in data["answers"]
    )
    decision = data.get("plan_decision") or None
    return Intent(
        tool_use_id=str(data["tool_use_id"]),
        kind=DialogKind(data["kind"]),
        answers=answers,
        plan_decision=PlanDecision(decision) if decision else None,
        feedback=str(data.get("feedback", "")),
        plan_mode=str(data.get("plan_mode", "")),
    )


def intent_for(dialog: Dialog, answers: Sequence[Answer]) -> Intent:
    """The intent of positional `answers` to `dialog` (answers[i] answers all_questions[i])."""
    if dialog.kind == DialogKind.APPROVAL:
        option = dialog.options[answers[0].choices[0]] if answers and answers[0].choices else None
        allow = option is not None and option.key.startswith(ALLOW)
        feedback = answers[0].text.strip() if option is not None and option.takes_text else ""
        decision = PlanDecision.APPROVE if allow else PlanDecision.REJECT
        return Intent(dialog.tool_use_id, dialog.kind, plan_decision=decision, feedback=feedback)
    if dialog.kind == DialogKind.PLAN:
        choice = answers[0].choices[0] if answers and answers[0].choices else 0
        if choice in (0, 1):
            mode = PLAN_LEAVES_MODE[choice]
            return Intent(dialog.tool_use_id, dialog.kind, plan_decision=PlanDecision.APPROVE, plan_mode=mode)
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


# --- tool-permission prompts (compat §7 "Approvals") -------------------------------------------

# Option keys: "<action>@<row>" names what the option does and the 0-based picker row it plays
# (recipes.approval_recipe). "deny" is Esc, no row.
ALLOW = "allow"
ALLOW_ONCE = "allow@0"
DENY = "deny"
FEEDBACK_ROW = {"Bash": 3, "Write": 2, "Edit": 2}  # the "No" row; Tab there takes feedback

# compat §7: Bash's rows are 1. Yes / 2. <the first suggestion> / 3. Yes, and switch to auto
# mode / 4. No; Write and Edit's are 1. Yes / 2. Yes, and switch to accept edits … for this
# session / 3. No. Row 2 of Bash is offered only for an addRules suggestion on Bash itself (the
# one that stops the next identical prompt, live-verified); "always allow access to <dir>"
# (addDirectories) did not stop it, so lab does not offer that row. Auto mode (row 3) is not
# offered: it cannot be verified offline (compat §4 test-bed note).


def approval_dialog(
    tool_use_id: str,
    tool_name: str,
    tool_input: Mapping[str, Any],
    suggestions: object,
    *,
    rules_load: bool = True,
) -> Dialog:
    """The approval a PermissionRequest asks for: what is asked (prompt, header = the tool,
    body = the command, the new file or the edit's diff) and the rows lab offers for it.

    `rules_load`: whether the run loads the settings file a saved rule goes to. It does not in
    a run of an untrusted repository (COMPAT-seeding §8): the rule would be saved and the next
    identical call asked again, so "don't ask again" is not offered there."""
    prompt, body = _asked(tool_name, tool_input)
    options = [Option("Allow once", "Run it this time; ask again next time.", key=ALLOW_ONCE)]
    first = suggestions[0] if isinstance(suggestions, list) and suggestions else None
    where = _RULE_DESTINATIONS.get(str(first.get("destination"))) if isinstance(first, dict) else None
    if rules_load and tool_name == "Bash" and isinstance(first, dict) and _bash_rule(first) and where:
        rule = stored_rule(_bash_rule(first))
        options.append(
            Option(
                f"Allow, and don't ask again for “{rule}”",
                f"Claude Code saves the rule Bash({rule}) in {where}.",
                key="allow-rule@1",
            )
        )
    if tool_name in ("Write", "Edit"):
        options.append(
            Option(
                "Allow, and accept every edit for the rest of the session",
                "Claude Code switches to accept-edits mode: file edits no longer ask.",
                key="allow-edits@1",
            )
        )
    if tool_name in FEEDBACK_ROW:
        options.append(
            Option(
                "Deny, and tell Claude what to do differently",
                "The tool does not run; your text goes back to it.",
                takes_text=True,
                needs_text=True,
                key=f"deny-feedback@{FEEDBACK_ROW[tool_name]}",
                denies=True,
            )
        )
    options.append(Option("Deny", "The tool does not run and the turn stops.", key=DENY, denies=True))
    return Dialog(
        tool_use_id=tool_use_id,
        kind=DialogKind.APPROVAL,
        prompt=prompt,
        header=tool_name,
        options=tuple(options),
        free_text=False,
        body=body,
    )


# compat §7: where the TUI writes a saved rule, by the suggestion's destination. localSettings is
# the repository's, not the worktree's: from a linked worktree the rule lands in the main
# checkout's file (live-verified), so it applies to every run of the repository.
_RULE_DESTINATIONS = {
    "localSettings": (
        "the repository's .claude/settings.local.json (in its main checkout), "
        "so it applies to every run of this repository"
    ),
    "projectSettings": (
        "the repository's .claude/settings.json (in its main checkout), "
        "so it applies to every run of this repository"
    ),
    "userSettings": "the agent's user settings, so it applies to every run of every repository",
    "session": "this session only",
}


def stored_rule(suggested: str) -> str:
    """The rule the TUI saves for a suggestion's ruleContent (compat §7): a prefix rule
    ("npm test *", "git commit *") as suggested; an exact command ("python3 -c …", "node -e …",
    "python3 script.py --fast") widened to its program ("python3 *"): the TUI's row says so and
    writes that, though the hook's suggestion names the exact command."""
    if suggested.endswith(" *") or suggested.endswith(":*"):
        return suggested
    program = suggested.split(maxsplit=1)[0] if suggested.strip() else suggested
    return f"{program} *"


def _bash_rule(suggestion: Mapping[str, Any]) -> str:
    """compat §7: {"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test *"}],
    "behavior":"allow","destination":"localSettings"} → "npm test *"."""
    if suggestion.get("type") != "addRules" or suggestion.get("behavior") != "allow":
        return ""
    rules = suggestion.get("rules")
    if not isinstance(rules, list) or len(rules) != 1 or not isinstance(rules[0], dict):
        return ""
    rule = rules[0]
    content = rule.get("ruleContent")
    return content if rule.get("toolName") == "Bash" and isinstance(content, str) else ""


# An Edit names a string, not lines: its diff's line numbers come from the file (read before the
# edit runs, which is when the CLI asks), and read no more than this of it.
EDIT_READ_MAX = 8 * 1024 * 1024
_HUNK = re.compile(r"@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")
NO_LINE_NUMBERS = "@@ line numbers not known @@"


def edit_diff(path: str, old_string: str, new_string: str, *, name: str = "") -> str:
    """The edit as a unified diff numbered as in the file: where old_string starts in it. When
    that is not known (the file cannot be read, the string is not in it or is there more than
    once), the hunk headers say so instead of numbering the snippet from 1."""
    start = _line_of(path, old_string)
    lines = []
    for line in difflib.unified_diff(
        old_string.splitlines(), new_string.splitlines(), fromfile=name, tofile=name, lineterm="", n=3
    ):
        hunk = _HUNK.fullmatch(line)
        if hunk is not None:
            line = (
                NO_LINE_NUMBERS
                if start is None
                else f"@@ -{int(hunk[1]) + start - 1}{hunk[2]} +{int(hunk[3]) + start - 1}{hunk[4]} @@"
            )
        lines.append(line)
    return "\n".join(lines)


def _line_of(path: str, needle: str) -> int | None:
    """The 1-based line where `needle` starts in the file at `path`, when it is there once."""
    if not needle or not os.path.isabs(path):
        return None
    try:
        # Non-blocking and checked: a FIFO at the path must not hang the dialog.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > EDIT_READ_MAX:
            return None
        text = f.read(EDIT_READ_MAX).decode("utf-8", "replace")
    at = text.find(needle)
    if at < 0 or text.find(needle, at + 1) >= 0:
        return None
    return text.count("\n", 0, at) + 1


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _asked(tool_name: str, tool_input: Mapping[str, Any]) -> tuple[str, str]:
    """(what is asked, in words; the detail the CLI shows under it)."""
    path = _text(tool_input.get("file_path"))
    name = PurePosixPath(path).name if path else ""
    if tool_name == "Bash":
        reason = _text(tool_input.get("description"))
        return (f"Run a shell command: {reason}" if reason else "Run a shell command"), _text(
            tool_input.get("command")
        )
    if tool_name == "Write":
        return f"Create {name or 'a file'} ({path})", _text(tool_input.get("content"))
    if tool_name == "Edit":
        old_string = _text(tool_input.get("old_string"))
        diff = edit_diff(path, old_string, _text(tool_input.get("new_string")), name=name)
        everywhere = " (every occurrence)" if tool_input.get("replace_all") is True else ""
        return f"Edit {name or 'a file'} ({path}){everywhere}", diff
    if tool_name == "WebFetch":
        return f"Fetch {_text(tool_input.get('url'))}", _text(tool_input.get("prompt"))
    detail = "\n".join(f"{k}: {v}" for k, v in tool_input.items())
    return f"Use the tool {tool_name}", detail
