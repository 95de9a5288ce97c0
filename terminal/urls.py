from django.urls import path

from terminal import views

app_name = "terminal"
urlpatterns = [
    path("runs/<int:run_id>/terminal/", views.terminal_view, name="view"),
    path("runs/<int:run_id>/terminal/keyboard/", views.terminal_keyboard, name="keyboard"),
]
