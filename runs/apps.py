from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"

    def ready(self) -> None:
        from hosts import runner
        from runs import rows

        runner.register("rows", rows.rows_data)  # the runs list's rows of this host's runs
