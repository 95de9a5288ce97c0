import asyncio

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from broadcast import groups
from providers.registry import _load, get_provider
from tests.factories import UserFactory

STUBS = {
    "fake": "auth_flows.tests.stubs.StubOAuthProvider",
    "keyed": "auth_flows.tests.stubs.StubApiKeyProvider",
    "ext": "auth_flows.tests.stubs.StubExternalProvider",
}


@pytest.fixture(autouse=True)
def stub_providers(settings):
    # The registry caches instances on (id, dotted): clear it so each test gets fresh stubs.
    _load.cache_clear()
    settings.LAB_PROVIDERS = dict(STUBS)
    yield
    _load.cache_clear()


@pytest.fixture
def fake():
    return get_provider("fake")


@pytest.fixture
def authed_client(client, db):
    client.force_login(UserFactory())
    return client


class LabGroup:
    """A listener on the channel-layer group every open lab page joins."""

    def __init__(self):
        self.layer = get_channel_layer()
        self.channel = async_to_sync(self.layer.new_channel)()
        async_to_sync(self.layer.group_add)(groups.LAB, self.channel)

    def receive(self, timeout=2.0):
        async def get():
            return await asyncio.wait_for(self.layer.receive(self.channel), timeout)

        return async_to_sync(get)()

    def assert_silent(self):
        with pytest.raises(TimeoutError):
            self.receive(timeout=0.2)

    def close(self):
        async_to_sync(self.layer.group_discard)("lab", self.channel)


@pytest.fixture
def lab_group():
    group = LabGroup()
    yield group
    group.close()
