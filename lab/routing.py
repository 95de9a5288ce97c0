from runs.routing import websocket_urlpatterns as runs_ws

websocket_urlpatterns = [*runs_ws]
