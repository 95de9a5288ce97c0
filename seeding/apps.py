from django.apps import AppConfig


class SeedingConfig(AppConfig):
    name = "seeding"
