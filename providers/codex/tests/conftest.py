"""The Codex adapter's unit tests."""

import pytest


@pytest.fixture(autouse=True)
def _private_runs_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> None:
    # The backstop's intents are stored under LAB_RUNS_DIR (providers/tui.py): each test gets its
    # own, so an intent one test records never arms another's read of the same fixture.
    if request.config.pluginmanager.hasplugin("django"):
        settings = request.getfixturevalue("settings")
        settings.LAB_RUNS_DIR = tmp_path_factory.mktemp("runs")
