"""What the no-auto-answer guard (tests/security/test_no_auto_answer.py) must know of the Codex
adapter: which of its functions may reach a keystroke (only those on an operator's request
path), which of its modules read signals (and so must never reach one), and which are data only.

Paths are relative to the repository, functions written ``path:Class.method`` (docs/providers.md,
"Adding a provider").
"""

from __future__ import annotations

# The operator's request path inside the adapter: a reply, a new conversation (/clear is typed
# only because the operator asked for one), an interrupt (Esc), an answer.
KEY_SENDERS = frozenset(
    {
        "providers/codex/provider.py:CodexProvider.reply",
        "providers/codex/provider.py:CodexProvider._clear",
        "providers/codex/provider.py:CodexProvider.interrupt",
        "providers/codex/provider.py:CodexProvider.answer_dialog",
    }
)
# Modules that read Codex's signals (hook spool, rollout): none may reach a keystroke.
SIGNAL_MODULES = (
    "providers/codex/spool.py",
    "providers/codex/transcript.py",
    "providers/codex/hook_spool.py",
)
SIGNAL_READERS = (
    "providers/codex/provider.py:CodexProvider.pending_dialog",
    "providers/codex/provider.py:CodexProvider.blocked_state",
    "providers/codex/provider.py:CodexProvider.spool_view",
    "providers/codex/provider.py:CodexProvider.sweep",
    "providers/codex/provider.py:CodexProvider.read_transcript",
    "providers/codex/provider.py:CodexProvider.locate_transcript",
)
PURE_MODULES: frozenset[str] = frozenset()
