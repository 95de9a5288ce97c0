from django.contrib import admin

from runs.models import Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin[Run]):
    list_display = ["name", "provider_id", "branch", "tmux_session", "created_at", "ended_at"]
    list_filter = [
        "provider_id",
        ("ended_at", admin.EmptyFieldListFilter),
        "attribution",
        "project_mcp",
        "created_at",
    ]
    search_fields = ["name", "branch", "repository", "worktree", "tmux_session", "session_id"]
    readonly_fields = ["created_at", "transcript_path", "session_id", "tmux_socket", "tmux_session"]
    date_hierarchy = "created_at"
