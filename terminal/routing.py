from django.urls import path

from terminal import consumers

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/terminal/", consumers.TerminalConsumer.as_asgi()),
]
