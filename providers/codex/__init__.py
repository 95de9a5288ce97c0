from providers.codex.provider import CodexProvider

__all__ = ["CodexProvider"]
