"""lab.layers bounds channels' expiry sweep by overriding InMemoryChannelLayer._clean_expired,
a private method: channels offers no public hook for how often its in-memory layer sweeps, and
writing a whole layer to get one would copy channels' queueing and group code. This pins what
the override relies on, so a channels upgrade that renames the method, changes its signature or
stops sweeping through it fails here instead of silently bringing the O(sockets) sweep back."""

from __future__ import annotations

import inspect

from channels.layers import InMemoryChannelLayer

from lab.layers import InMemoryChannelLayer as LabLayer


def test_the_private_sweep_takes_only_self():
    assert list(inspect.signature(InMemoryChannelLayer._clean_expired).parameters) == ["self"]
    assert LabLayer._clean_expired is not InMemoryChannelLayer._clean_expired


async def test_channels_sweeps_through_it_on_receive_and_group_send():
    sweeps: list[str] = []

    class Counting(InMemoryChannelLayer):
        def _clean_expired(self) -> None:
            sweeps.append("sweep")
            super()._clean_expired()

    layer = Counting()
    channel = await layer.new_channel()
    await layer.group_add("g", channel)
    await layer.group_send("g", {"type": "x"})
    assert sweeps, "group_send no longer sweeps through _clean_expired"
    sweeps.clear()
    await layer.receive(channel)
    assert sweeps, "receive no longer sweeps through _clean_expired"


async def test_a_group_send_reaches_every_member_but_a_full_one_and_sweeps():
    layer = LabLayer(capacity=1)
    members = [await layer.new_channel() for _ in range(3)]
    for channel in members:
        await layer.group_add("g", channel)
    await layer.send(members[1], {"type": "first"})  # full now
    assert layer._next_sweep == 0
    await layer.group_send("g", {"type": "x", "html": "<p>a</p>"})
    assert layer._next_sweep > 0, "lab's group_send no longer sweeps through _clean_expired"
    assert [(await layer.receive(c))["type"] for c in members] == ["x", "first", "x"]
