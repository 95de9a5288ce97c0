from providers.gemini.provider import GeminiProvider

__all__ = ["GeminiProvider"]
