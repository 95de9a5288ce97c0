"""What the no-auto-answer guard (tests/security/test_no_auto_answer.py) must know of the Codex
adapter: which of its functions may reach a keystroke (only those on an operator's request
path), which of its modules read signals (and so must never reach one), and which are data only.

Paths are relative to the repository, functions written ``path:Class.method`` (docs/providers.md,
"Adding a provider").
"""

from __future__ import annotations

# The operator's request path inside the adapter: a new conversation (/clear is typed only
# because the operator asked for one), an answer's key, and its verification (a decline's
# feedback goes as a reply). The reply, interrupt and answer protocols themselves are the
# kit's (providers/tui.py, in the guard's generic list).
KEY_SENDERS = frozenset(
    {
        "providers/codex/provider.py:CodexProvider.special_send",
        "providers/codex/provider.py:CodexProvider.play_answer",
        "providers/codex/provider.py:CodexProvider.verify_answer",
    }
)
# Modules that read Codex's signals (hook spool, rollout): none may reach a keystroke.
SIGNAL_MODULES = (
    "providers/codex/spool.py",
    "providers/codex/transcript.py",
)
# The adapter's parts of the seam's signal readers (the kit's own are in the guard's generic
# list): each must exist and reach no key.
SIGNAL_READERS = (
    "providers/codex/provider.py:CodexProvider.fold_spool",
    "providers/codex/provider.py:CodexProvider.answered_among",
    "providers/codex/provider.py:CodexProvider.parse_transcript",
    "providers/codex/provider.py:CodexProvider.locate_in_spool",
)
PURE_MODULES: frozenset[str] = frozenset()
