from django.urls import re_path

from lab.websocket import NoSuchSocket
from live.routing import websocket_urlpatterns as runs_ws

# The catch-all last: a path no app serves is refused with a close code, not an exception.
websocket_urlpatterns = [*runs_ws, re_path(r"", NoSuchSocket.as_asgi())]
