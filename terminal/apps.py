from django.apps import AppConfig


class TerminalConfig(AppConfig):
    name = "terminal"
    verbose_name = "Terminal"

    def ready(self) -> None:
        from terminal import keyboard

        keyboard.connect()
