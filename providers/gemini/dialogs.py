"""Gemini CLI 0.61.0's tool confirmation as lab's APPROVAL Dialog, and the keys that answer it.
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

from collections.abc import Mapping, Sequence

from providers.schema import Answer, Dialog, DialogKind, KeyChoice, Option, key_choice

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
