"""The single-process channel layer: channels' in-memory layer with its expiry sweep bounded.

channels.layers.InMemoryChannelLayer sweeps every channel queue and every group membership for
expiry on every receive and every group send — O(sockets) per message. At 50 busy runs (one socket
each, all in the "lab" group) that sweep was 12% of daphne's CPU in the latency benchmark
(bench/). Messages expire after 60 s and memberships after a day, so sweeping at most once a
second expires everything as it did, at most a second later.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from copy import deepcopy
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer as _InMemoryChannelLayer
from django.utils.safestring import SafeString

SWEEP_EVERY_S = 1.0


class InMemoryChannelLayer(_InMemoryChannelLayer):
    _next_sweep = 0.0

    # A private method of channels, overridden on purpose: channels has no public hook for how
    # often the in-memory layer sweeps. tests/test_channel_layer.py fails if channels renames
    # it, changes its signature or stops sweeping through it (channels is pinned exactly).
    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_EVERY_S
        super()._clean_expired()

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        """channels' send, without its two costs per socket per message: a deep copy of the
        message (lab's are flat dicts of strings and numbers: a shallow copy isolates them as
        well; anything else is still deep-copied) and a new asyncio.Queue built on every call
        as setdefault's default. Each was more than the frame's own send (bench/append_cost)."""
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        queue = self.channels.get(channel)
        if queue is None:
            queue = self.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
        flat = all(type(v) in _IMMUTABLE for v in message.values())
        try:
            queue.put_nowait((time.time() + self.expiry, dict(message) if flat else deepcopy(message)))
        except asyncio.QueueFull:
            raise ChannelFull(channel) from None

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        """channels' group_send without a task per member (it creates one for each and waits
        for them all): send above never waits, a full queue raises at once, so the members are
        sent to in turn, as channels' own tasks would have done."""
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        for channel in list(self.groups.get(group, ())):
            with contextlib.suppress(ChannelFull):
                await self.send(channel, message)


# SafeString too: every rendered fragment is one (the panel in each run.update), and it is a str.
_IMMUTABLE = frozenset({str, SafeString, int, float, bool, bytes, type(None)})
