import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")
django_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (after Django is set up)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from lab.errors import StaticFilesHandler  # noqa: E402
from lab.routing import websocket_urlpatterns  # noqa: E402
from lab.websocket import ExactOriginValidator  # noqa: E402

# Static files from the finders, served in-process: lab is one daphne process with no build
# step and no reverse proxy by default.
django_asgi_app = StaticFilesHandler(django_app)

# The scheduled messages' loop (runs/schedule.py) runs in the serve process only: tests and
# other importers of this module start nothing.
from django.conf import settings  # noqa: E402

if os.environ.get("LAB_SERVE") == "1" and settings.LAB_ROLE == "all":
    # A web tier sends nothing to agents and has no host: each runner does both for its own.
    from runs import schedule

    schedule.start()
    if settings.REDIS_URL:
        # Other hosts share this database: the web tier shows this one up while it beats.
        from hosts import heartbeat

        heartbeat.start_thread(settings.LAB_HOST)

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": ExactOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
