"""What the no-auto-answer guard (tests/security/test_no_auto_answer.py) must know of the Claude
Code adapter: which of its functions may reach a keystroke (only those on an operator's request
path), which of its modules read signals (and so must never reach one), and which are data only.

Paths are relative to the repository, functions written ``path:Class.method``. Each adapter's
compat folder has this file (docs/providers.md, "Adding a provider"): the guard reads it through
the registry and fails loudly for an adapter without one.
"""

from __future__ import annotations

# The operator's request path inside the adapter: a reply, an interrupt, a return to the
# prompt, an answer, and the one function that plays a recipe's keystrokes.
KEY_SENDERS = frozenset(
    {
        "providers/claude_code/replying.py:Replying.reply",
        "providers/claude_code/replying.py:Replying.interrupt",
        "providers/claude_code/replying.py:Replying.return_to_prompt",
        "providers/claude_code/answering.py:Answering.answer_dialog",
        "providers/claude_code/answering.py:Answering._play",
    }
)
# Modules that read the CLI's signals (hook spool, transcript, tool results): none of their
# functions may reach a keystroke.
SIGNAL_MODULES = (
    "providers/claude_code/livesignals.py",
    "providers/claude_code/signals.py",
    "providers/claude_code/reading.py",
    "providers/claude_code/tool_results.py",
    "providers/claude_code/transcript.py",
    "providers/claude_code/hook_spool.py",
)
# The seam's signal readers as this adapter implements them: each must exist and reach no key.
SIGNAL_READERS = (
    "providers/claude_code/signals.py:Signals.pending_dialog",
    "providers/claude_code/signals.py:Signals.blocked_state",
    "providers/claude_code/signals.py:Signals.spool_view",
    "providers/claude_code/signals.py:Signals.sweep",
    "providers/claude_code/reading.py:Reading.read_transcript",
    "providers/claude_code/reading.py:Reading.locate_transcript",
)
# Data only: recipes build keystroke plans (`recipes.paste(text)` returns an Op) and import
# nothing that can send one; only Answering._play sends them.
PURE_MODULES = frozenset({"providers/claude_code/recipes.py"})
