from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Operator accounts"

    def ready(self) -> None:
        from django.contrib import admin

        from accounts import signals, sockets, views

        # Admin's own login view would be a second password form without lab's rate limit:
        # every login goes through lab's one.
        admin.site.login = views.admin_login  # type: ignore[method-assign]
        signals.connect()
        sockets.connect()
