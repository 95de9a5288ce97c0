"""The pane stream against a real tmux server: what a viewer gets is what the pane shows, in
order, once; keys reach the pane as typed; a slow viewer starts again from the screen."""

from __future__ import annotations

import asyncio
import re
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from terminal import panestream
from terminal.panestream import Snapshot, Viewer, decode_output, streams


@pytest.fixture
def pane() -> Iterator[tuple[str, str]]:
    socket = f"labtest-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    # A UTF-8 locale: bash in the C locale turns a typed "€" into meta keys.
    shell = ["env", "LANG=C.UTF-8", "bash", "--norc", "--noprofile"]
    size = ["-x", "80", "-y", "24"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "t", *size, "--", *shell], check=True)
    subprocess.run([*tmux, "set-option", "-w", "-t", "=t:", "window-size", "manual"], check=True)
    yield socket, "t"
    subprocess.run([*tmux, "kill-server"], capture_output=True)


_ESCAPES = re.compile(rb"\x1b(\[[0-9;?]*[A-Za-z]|c|[=>])")


def capture(socket: str) -> str:
    out = subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-t", "=t:"], capture_output=True)
    return out.stdout.decode()


async def prompt_shown(socket: str) -> None:
    """The shell has drawn its prompt: its line editor takes keys (before, the tty's own
    line discipline would take the arrows as text)."""
    async with asyncio.timeout(10):
        while "$" not in capture(socket) and "#" not in capture(socket):
            await asyncio.sleep(0.05)


async def received(viewer: Viewer, wanted: bytes, timeout: float = 10.0) -> bytes:
    """Everything the viewer gets until `wanted` is among it."""
    got = b""
    async with asyncio.timeout(timeout):
        while wanted not in got:
            await viewer.ready.wait()
            got += viewer.take()
    return got


def test_output_values_are_unescaped_as_tmux_escapes_them() -> None:
    assert decode_output(rb"a\015\012b\134c\033[0m") == b"a\r\nb\\c\x1b[0m"
    assert decode_output("é".encode()) == "é".encode()


def test_a_snapshot_draws_the_rows_then_puts_the_cursor_and_modes_back() -> None:
    state = panestream.PaneState.parse("%3 80 24 5 2 0 1 1 0 0")
    screen = Snapshot.build(state, [b"one", b"two"]).screen
    assert screen.startswith(b"\x1bc\x1b[?1049h")  # reset, then the alternate screen it was on
    assert b"one\x1b[0m\r\ntwo" in screen
    assert screen.endswith(b"\x1b[3;6H\x1b[?1h\x1b>\x1b[?25l")


async def test_a_viewer_sees_the_screen_then_every_later_byte_once(pane) -> None:
    socket, session = pane
    subprocess.run(
        ["tmux", "-L", socket, "send-keys", "-t", "=t:", "echo before-$((1+1))", "Enter"], check=True
    )
    stream = await streams().open(socket, session)
    try:
        async with asyncio.timeout(10):
            while "before-2" not in capture(socket):
                await asyncio.sleep(0.05)
        viewer = Viewer()
        snapshot = await stream.subscribe(viewer)
        assert b"before-2" in snapshot.screen
        assert (snapshot.state.width, snapshot.state.height) == (80, 24)
        await stream.send_keys(b"echo after-$((2+2))\r")
        got = await received(viewer, b"after-4")
        assert b"before-2" not in got  # the snapshot had it; the stream does not repeat it
        assert got.count(b"after-4") == 1
    finally:
        await streams().release(stream)


async def test_keys_reach_the_pane_byte_for_byte(pane) -> None:
    socket, session = pane
    stream = await streams().open(socket, session)
    try:
        await prompt_shown(socket)
        viewer = Viewer()
        await stream.subscribe(viewer)
        # UTF-8, a Ctrl key (Ctrl-U clears the line), an arrow's escape sequence.
        await stream.send_keys("echo junk\x15echo €-ok\x1b[D\x1b[C\r".encode())
        await received(viewer, "€-ok\r\n".encode())
        async with asyncio.timeout(10):
            while "€-ok" not in capture(socket).split("echo €-ok", 1)[-1]:
                await asyncio.sleep(0.05)
        assert "junk" not in capture(socket)
    finally:
        await streams().release(stream)


async def test_a_viewer_too_far_behind_is_dropped_to_a_snapshot(pane, monkeypatch) -> None:
    monkeypatch.setattr(panestream, "VIEWER_MAX_BYTES", 4096)
    socket, session = pane
    stream = await streams().open(socket, session)
    try:
        viewer = Viewer()
        await stream.subscribe(viewer)
        await stream.send_keys(b"seq 1 5000\r")
        async with asyncio.timeout(10):
            while not viewer.behind:
                await viewer.ready.wait()
                if not viewer.behind:
                    await asyncio.sleep(0.2)  # a slow page: it does not take what waits
        assert viewer.size == 0  # the backlog is dropped, not held
        snapshot = await stream.subscribe(viewer)
        assert not viewer.behind
        assert snapshot.state.height == 24
    finally:
        await streams().release(stream)


async def test_the_viewer_learns_when_the_session_ends(pane) -> None:
    socket, session = pane
    stream = await streams().open(socket, session)
    viewer = Viewer()
    await stream.subscribe(viewer)
    subprocess.run(["tmux", "-L", socket, "kill-session", "-t", "=t"], check=True)
    async with asyncio.timeout(10):
        while not viewer.ended:
            await viewer.ready.wait()
            viewer.take()
    assert stream.closed
    await streams().release(stream)


async def test_the_last_viewer_gone_detaches_the_client(pane) -> None:
    socket, session = pane
    first = await streams().open(socket, session)
    second = await streams().open(socket, session)
    assert first is second  # one control client per pane per process
    await streams().release(first)
    assert not first.closed
    await streams().release(second)
    assert first.closed
    clients = subprocess.run(["tmux", "-L", socket, "list-clients"], capture_output=True).stdout
    assert clients.strip() == b""


async def test_a_pane_that_is_not_there_is_a_closed_stream(pane) -> None:
    socket, _ = pane
    with pytest.raises(panestream.StreamClosed):
        await streams().open(socket, "nosuch")


async def test_a_viewer_joining_mid_output_misses_no_line_and_repeats_none(pane) -> None:
    socket, session = pane
    stream = await streams().open(socket, session)
    try:
        await prompt_shown(socket)
        watcher = Viewer()
        await stream.subscribe(watcher)
        await stream.send_keys(b"for i in $(seq 1 20000); do echo L$i; done; echo DONE-$((5*5))\r")
        await received(watcher, b"L200\r\n")  # well under way
        late = Viewer()
        snapshot = await stream.subscribe(late)
        rest = await received(late, b"DONE-25")
        # The screen up to the cursor, then the stream: one text, as a terminal would have it.
        # The cursor's row whole: a snapshot taken between a line's \r and its \n shows the line
        # with the cursor back at column 0, and the stream goes on with the \n alone.
        rows = _ESCAPES.sub(b"", snapshot.screen).split(b"\r\n")[: snapshot.state.cursor_y + 1]
        numbers = [int(n) for n in re.findall(rb"L(\d+)\r?\n", b"\r\n".join(rows) + rest)]
        assert len(re.findall(rb"L\d+", rows[0] + rows[1])) > 0  # the screen had lines of it
        assert numbers == list(range(numbers[0], 20001))  # none missed, none twice
    finally:
        await streams().release(stream)
