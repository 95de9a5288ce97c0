"""What the no-auto-answer guard (tests/security/test_no_auto_answer.py) must know of the Gemini
adapter (docs/providers.md, "Adding a provider")."""

from __future__ import annotations

# The operator's request path inside the adapter: a new conversation (/clear is typed only
# because the operator asked for one), an answer's keys (a question's recipe built, then
# played), and its verification (a decline's feedback goes as a reply).
KEY_SENDERS = frozenset(
    {
        "providers/gemini/provider.py:GeminiProvider.special_send",
        "providers/gemini/provider.py:GeminiProvider.plan_answer",
        "providers/gemini/provider.py:GeminiProvider.play_answer",
        "providers/gemini/provider.py:GeminiProvider.verify_answer",
    }
)
# Modules that read Gemini's signals (hook spool, session file): none may reach a keystroke.
SIGNAL_MODULES = (
    "providers/gemini/spool.py",
    "providers/gemini/transcript.py",
)
SIGNAL_READERS = (
    "providers/gemini/provider.py:GeminiProvider.fold_spool",
    "providers/gemini/provider.py:GeminiProvider.answered_among",
    "providers/gemini/provider.py:GeminiProvider.parse_transcript",
    "providers/gemini/provider.py:GeminiProvider.locate_in_spool",
)
# Data only: recipes build keystroke plans and import nothing that can send one.
PURE_MODULES: frozenset[str] = frozenset(
    {"providers/gemini/dialogs.py", "providers/gemini/commands.py", "providers/gemini/recipes.py"}
)
