"""Case 16: the socket drops mid-stream and reconnects — no gap, no duplicate — and a channel
layer at capacity drops notifications: recovery comes from the transcript (each socket pulls what
it lacks on the next notification or on its reconnect's hello), never from the layer."""

from __future__ import annotations

import asyncio
import re
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from channels.exceptions import ChannelFull
from channels.layers import channel_layers, get_channel_layer

from live.consumers import RunConsumer
from providers.testing import fake_append
from runs import services
from tests.security.support import drain, frames_until, seqs, session_cookie, ws_open


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/rc")


@pytest.fixture
def tiny_layer(settings):
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 1}}
    }
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


def _epoch(frames: list[str]) -> str:
    return re.findall(r'data-epoch="(\w+)"', "".join(frames))[-1]


class Writer(threading.Thread):
    """Appends `count` messages, `per_s` a second, as the agent's CLI would."""

    def __init__(self, path: str, count: int, per_s: float, start_at: int = 0) -> None:
        super().__init__(daemon=True)
        self.path, self.count, self.per_s, self.start_at = path, count, per_s, start_at

    def run(self) -> None:
        for i in range(self.start_at, self.start_at + self.count):
            fake_append(self.path, kind="assistant_text", text=f"m{i}")
            time.sleep(1 / self.per_s)


@pytest.mark.django_db(transaction=True)
async def test_a_drop_mid_stream_and_reconnect_has_no_gap_and_no_duplicate(run, operator):
    cookie = await sync_to_async(session_cookie)(operator)
    total = 120
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    writer = Writer(run.transcript_path, total, per_s=200)
    writer.start()
    first = await frames_until(ws, lambda f: bool(seqs([f])) and max(seqs([f])) >= 30)
    await ws.disconnect()  # the tab loses its socket mid-stream
    got = seqs(first)
    epoch = _epoch(first)
    await asyncio.sleep(0.1)
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    await ws.send_json_to({"type": "hello", "epoch": epoch, "seq": got[-1]})
    second = await frames_until(ws, lambda f: f"m{total - 1}<" in f, timeout=20)
    second += await drain(ws)
    await ws.disconnect()
    writer.join()
    assert got + seqs(second) == list(range(total))


@pytest.mark.django_db(transaction=True)
async def test_a_full_channel_layer_loses_notifications_not_messages(run, operator, tiny_layer, monkeypatch):
    cookie = await sync_to_async(session_cookie)(operator)
    layer = get_channel_layer()
    assert layer.capacity == 1
    dropped = 0
    real_send = layer.send

    async def counting_send(channel, message):
        nonlocal dropped
        try:
            return await real_send(channel, message)
        except ChannelFull:
            dropped += 1
            raise

    layer.send = counting_send
    total = 150
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    await drain(ws)
    # The socket is busy with its first notification until the writer is done, so the next ones
    # find its one-slot channel full and are dropped (a fast consumer otherwise keeps up).
    gate = asyncio.Event()
    real_update = RunConsumer.run_update

    async def busy_update(self, event):
        await gate.wait()
        await real_update(self, event)

    monkeypatch.setattr(RunConsumer, "run_update", busy_update)
    writer = Writer(run.transcript_path, total, per_s=500)
    writer.start()
    frames: list[str] = []
    while writer.is_alive():
        frames += await drain(ws, 0.05)
    gate.set()
    frames += await drain(ws, 0.5)
    got = seqs(frames)
    assert len(got) == len(set(got)) and got == sorted(got)  # never a duplicate or a reorder
    # Whatever the layer dropped, the next notification (one more line) or a reconnect brings it.
    fake_append(run.transcript_path, kind="assistant_text", text=f"m{total}")
    frames = await frames_until(ws, lambda f: f"m{total}<" in f)
    got += seqs(frames + await drain(ws))
    await ws.disconnect()
    assert got == list(range(total + 1))
    assert dropped > 0, "the layer never hit its capacity: the test proved nothing"


@pytest.mark.django_db(transaction=True)
async def test_dropped_notifications_are_recovered_from_the_transcript(run, operator, monkeypatch):
    cookie = await sync_to_async(session_cookie)(operator)
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    fake_append(run.transcript_path, kind="assistant_text", text="m0")
    frames = await frames_until(ws, lambda f: "m0<" in f)
    epoch = _epoch(frames)
    layer = get_channel_layer()
    real_send = layer.group_send
    dropping = {"on": True}

    async def lossy(group, message):  # the layer at capacity: every run notification is lost
        if dropping["on"] and group == run.group_name:
            return None
        return await real_send(group, message)

    monkeypatch.setattr(layer, "group_send", lossy)
    for i in (1, 2, 3):
        fake_append(run.transcript_path, kind="assistant_text", text=f"m{i}")
    assert "m3<" not in "".join(await drain(ws, 0.6))  # nothing came through the layer
    dropping["on"] = False
    fake_append(run.transcript_path, kind="assistant_text", text="m4")
    frames = await frames_until(ws, lambda f: "m4<" in f)
    assert seqs(frames + await drain(ws)) == [1, 2, 3, 4]  # the next notification pulls the gap
    await ws.disconnect()

    # With every notification lost, a reconnect's hello alone catches up.
    dropping["on"] = True
    for i in (5, 6):
        fake_append(run.transcript_path, kind="assistant_text", text=f"m{i}")
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    await ws.send_json_to({"type": "hello", "epoch": epoch, "seq": 4})
    frames = await frames_until(ws, lambda f: "m6<" in f)
    assert seqs(frames + await drain(ws)) == [5, 6]
    await ws.disconnect()
