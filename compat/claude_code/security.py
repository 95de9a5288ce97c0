"""What the no-auto-answer guard (tests/security/test_no_auto_answer.py) must know of the Claude
Code adapter: which of its functions may reach a keystroke (only those on an operator's request
path), which of its modules read signals (and so must never reach one), and which are data only.

Paths are relative to the repository, functions written ``path:Class.method``. Each adapter's
compat folder has this file (docs/providers.md, "Adding a provider"): the guard reads it through
the registry and fails loudly for an adapter without one.
"""

from __future__ import annotations

# The operator's request path inside the adapter: a return to the prompt, and the answer's
# keys (its recipe built, played, and played again on a safe retry). The reply, interrupt and answer
# protocols themselves are the kit's (providers/tui.py, in the guard's generic list).
KEY_SENDERS = frozenset(
    {
        "providers/claude_code/provider.py:ClaudeCodeProvider.return_to_prompt",
        "providers/claude_code/provider.py:ClaudeCodeProvider.plan_answer",
        "providers/claude_code/provider.py:ClaudeCodeProvider.play_answer",
        "providers/claude_code/provider.py:ClaudeCodeProvider.verify_answer",
    }
)
# Modules that read the CLI's signals (hook spool, transcript, tool results): none of their
# functions may reach a keystroke.
SIGNAL_MODULES = (
    "providers/claude_code/spool.py",
    "providers/claude_code/tool_results.py",
    "providers/claude_code/transcript.py",
)
# The adapter's parts of the seam's signal readers (the kit's own are in the guard's generic
# list): each must exist and reach no key.
SIGNAL_READERS = (
    "providers/claude_code/provider.py:ClaudeCodeProvider.fold_spool",
    "providers/claude_code/provider.py:ClaudeCodeProvider.answered_among",
    "providers/claude_code/provider.py:ClaudeCodeProvider.parse_transcript",
    "providers/claude_code/provider.py:ClaudeCodeProvider.locate_in_spool",
    "providers/claude_code/provider.py:ClaudeCodeProvider.connecting",
)
# Data only: recipes build keystroke plans (`recipes.paste(text)` returns an Op) and import
# nothing that can send one; only ClaudeCodeProvider.play_answer sends them.
PURE_MODULES = frozenset({"providers/claude_code/recipes.py"})
