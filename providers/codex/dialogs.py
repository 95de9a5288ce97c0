"""Codex 0.171.0's approval prompt as lab's APPROVAL Dialog, and the keys that answer it.
No Django. Pinned in compat/codex/COMPAT-adapter.md §7.

The prompt ("Would you like to run the following command?") has three rows, each with its own
key: `y` proceeds once, `p` proceeds and stops asking for commands that start the same way, Esc
declines, which aborts the whole turn ("No, and tell Codex what to do differently": the
operator's text is then the next message). The labels are lab's, pinned here, never read from
the pane.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from providers.schema import Answer, Dialog, DialogKind, KeyChoice, Option, key_choice

# The TUI asks "Would you like to run the following command?" and shows the model's reason.
PROMPT = "Run a command outside the sandbox"
ALLOW, ALLOW_PREFIX, DENY = "allow", "allow-prefix", "deny"
# §7: the key each row is played with (tmux key names).
KEYS = {ALLOW: "y", ALLOW_PREFIX: "p", DENY: "Escape"}
OPTIONS = (
    Option(label="Yes, proceed", key=ALLOW),
    Option(
        label="Yes, and don't ask again for commands that start like this one",
        # §7: the CLI saves the allow rule in its home's rules/default.rules, which every run
        # sharing lab's CODEX_HOME reads.
        description="Codex saves an allow rule in its home: later runs stop asking for these too.",
        key=ALLOW_PREFIX,
    ),
    Option(
        label="No, and tell Codex what to do differently",
        description="Stops the turn; your text, if any, is sent as the next message.",
        takes_text=True,
        key=DENY,
        denies=True,
    ),
)


def approval_dialog(tool_use_id: str, tool_name: str, tool_input: Mapping[str, object]) -> Dialog:
    """What is asked, as the page words it ("<name> asks permission to run a command: <the
    model's reason>"), the tool, and the command as the detail (the PermissionRequest's input)."""
    command = tool_input.get("command")
    reason = tool_input.get("description")
    prompt = f"{PROMPT}: {reason}" if isinstance(reason, str) and reason else PROMPT
    return Dialog(
        tool_use_id=tool_use_id,
        kind=DialogKind.APPROVAL,
        prompt=prompt,
        header=tool_name,
        body=command if isinstance(command, str) else "",
        options=OPTIONS,
        free_text=False,
    )


Choice = KeyChoice


def choice_for(dialog: Dialog, answers: Sequence[Answer]) -> Choice:
    """The one option an approval's answer names; an empty answer declines."""
    return key_choice(
        dialog,
        answers,
        keys=KEYS,
        deny=DENY,
        not_approval="Codex asks nothing but command approvals that lab can answer.",
    )
