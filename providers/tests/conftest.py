"""The transcript and JSONL tests need no Django: they also run with `-p no:django`."""

import pytest


@pytest.fixture(autouse=True)
def _fast_password_hashing(request: pytest.FixtureRequest) -> None:
    # Shadows the root conftest's autouse fixture, which needs pytest-django's `settings`:
    # keep its effect when pytest-django is loaded, skip it when it is not.
    if request.config.pluginmanager.hasplugin("django"):
        settings = request.getfixturevalue("settings")
        settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
