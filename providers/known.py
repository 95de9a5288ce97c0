"""The one registry line per provider: its id and the dotted path of its AgentProvider class.

Imports nothing, so settings read it before Django is set up (lab/settings.py builds
LAB_KNOWN_PROVIDERS from it). Everything else about a provider is found from its package, the
segment after ``providers.`` in the dotted path: the adapter is ``providers/<package>/``, its test
bed ``compat/<package>/`` with the conformance driver in ``compat/<package>/driver.py``
(docs/providers.md, "Adding a provider").
"""

from __future__ import annotations

KNOWN_PROVIDERS: dict[str, str] = {
    "claude-code": "providers.claude_code.ClaudeCodeProvider",
    "codex": "providers.codex.CodexProvider",
    "gemini": "providers.gemini.GeminiProvider",
}


def package(provider_id: str, known: dict[str, str] = KNOWN_PROVIDERS) -> str:
    """``claude_code`` for ``claude-code``: the folder name under providers/ and compat/."""
    dotted = known[provider_id]
    root, name, *_ = dotted.split(".")
    if root != "providers" or not _:
        raise ValueError(f"{provider_id}: {dotted!r} is not providers.<package>.<Class>")
    return name
