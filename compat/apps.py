from django.apps import AppConfig


class CompatConfig(AppConfig):
    """The pinned CLIs' test bed: registered only so `manage.py demo` and
    `manage.py scripted_model` exist. No models, nothing the generic core imports."""

    name = "compat"
    verbose_name = "CLI compatibility test bed"
