from django.urls import path

from hosts.proxy import routed
from runs.relay import socket_host
from terminal import consumers

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/terminal/", routed(consumers.TerminalConsumer.as_asgi(), socket_host)),
]
