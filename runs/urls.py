from django.urls import path

from runs import changes_views, views

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
    path("runs/<int:run_id>/remove-worktree/", views.run_remove_worktree, name="remove_worktree"),
]
