from django.urls import path

from live import consumers

websocket_urlpatterns = [
    path("ws/lab/", consumers.LabConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", consumers.RunConsumer.as_asgi()),
]
