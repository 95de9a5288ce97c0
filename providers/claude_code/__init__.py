from providers.claude_code.provider import ClaudeCodeProvider

__all__ = ["ClaudeCodeProvider"]
