"""The transcript and JSONL tests need no Django: they also run with `-p no:django`."""

import pytest


@pytest.fixture(autouse=True)
def _fast_password_hashing(request: pytest.FixtureRequest) -> None:
    # Shadows the root conftest's autouse fixture, which needs pytest-django's `settings`:
    # keep its effect when pytest-django is loaded, skip it when it is not.
    if request.config.pluginmanager.hasplugin("django"):
        settings = request.getfixturevalue("settings")
        settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _private_runs_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> None:
    # The backstop's intents are stored under LAB_RUNS_DIR (providers/tui.py): each test gets its
    # own, so an intent one test records never arms another's read of the same fixture.
    if request.config.pluginmanager.hasplugin("django"):
        settings = request.getfixturevalue("settings")
        settings.LAB_RUNS_DIR = tmp_path_factory.mktemp("runs")
