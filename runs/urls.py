from django.urls import path

from runs import changes_views, schedule_views, ship_views, views

app_name = "runs"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("runs/new/", views.run_new, name="new"),
    path("runs/new/repository/", views.run_new_review, name="new_review"),
    path("runs/<int:run_id>/", views.run_detail, name="detail"),
    path("runs/<int:run_id>/messages/", views.run_messages, name="messages"),
    path("runs/<int:run_id>/messages/full/", views.run_message_full, name="message_full"),
    path("runs/<int:run_id>/reply/", views.run_reply, name="reply"),
    path("runs/<int:run_id>/attachments/<str:name>", views.run_attachment, name="attachment"),
    path("runs/<int:run_id>/commands/", views.run_commands, name="commands"),
    path("runs/<int:run_id>/answer/", views.run_answer, name="answer"),
    path("runs/<int:run_id>/interrupt/", views.run_interrupt, name="interrupt"),
    path("runs/<int:run_id>/return-to-prompt/", views.run_return_to_prompt, name="return_to_prompt"),
    path("runs/<int:run_id>/end/", views.run_end, name="end"),
    path("runs/<int:run_id>/sessions/", views.run_sessions, name="sessions"),
    path("runs/<int:run_id>/resume/", views.run_resume, name="resume"),
    path("runs/<int:run_id>/changes/", changes_views.run_changes, name="changes"),
    path("runs/<int:run_id>/changes/file/", changes_views.run_changes_file, name="changes_file"),
    path("runs/<int:run_id>/changes/review/", ship_views.run_review, name="review"),
    path("runs/<int:run_id>/changes/commit/", ship_views.run_commit, name="commit"),
    path("runs/<int:run_id>/changes/ask-commit/", ship_views.run_ask_commit, name="ask_commit"),
    path("runs/<int:run_id>/changes/push/", ship_views.run_push, name="push"),
    path("runs/<int:run_id>/changes/pull-request/", ship_views.run_pull_request, name="pull_request"),
    path("runs/<int:run_id>/changes/merge/", ship_views.run_merge, name="merge"),
    path("runs/<int:run_id>/remove-worktree/", views.run_remove_worktree, name="remove_worktree"),
    path("runs/<int:run_id>/continue/", schedule_views.run_continue, name="continue"),
    path("runs/<int:run_id>/schedule/", schedule_views.run_schedule, name="schedule"),
    path(
        "runs/<int:run_id>/schedule/<int:message_id>/cancel/",
        schedule_views.run_schedule_cancel,
        name="schedule_cancel",
    ),
]
