"""lab's settings with the FakeProvider as the only provider, for tests that run lab itself
(manage.py serve → daphne) in a subprocess."""

from lab.settings import *  # noqa: F403

LAB_PROVIDERS = {"fake": "providers.testing.FullFakeProvider"}
LAB_DEFAULT_PROVIDER = "fake"
