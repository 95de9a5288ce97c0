from django.urls import re_path

from lab.websocket import NoSuchSocket
from live.routing import websocket_urlpatterns as runs_ws
from terminal.routing import websocket_urlpatterns as terminal_ws

# The catch-all last: a path no app serves is refused with a close code, not an exception.
websocket_urlpatterns = [*terminal_ws, *runs_ws, re_path(r"", NoSuchSocket.as_asgi())]
