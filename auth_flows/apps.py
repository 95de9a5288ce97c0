from django.apps import AppConfig


class AuthFlowsConfig(AppConfig):
    name = "auth_flows"
    verbose_name = "Provider login"
