from django.apps import AppConfig


class LiveConfig(AppConfig):
    """The live pipeline: the watchers, their inotify, leases, frames, sockets and the feed."""

    name = "live"

    def ready(self) -> None:
        from live import watcher
        from runs.signals import run_changed

        run_changed.connect(watcher.on_run_changed, dispatch_uid="live.watcher.poke")
