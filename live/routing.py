from django.urls import path

from hosts.proxy import routed
from live import consumers
from runs.relay import socket_host

websocket_urlpatterns = [
    path("ws/lab/", consumers.LabConsumer.as_asgi()),
    # A run of another host: its socket is its runner's (hosts/proxy.py).
    path("ws/runs/<int:run_id>/", routed(consumers.RunConsumer.as_asgi(), socket_host)),
]
