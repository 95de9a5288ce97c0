"""The Terminal view's socket: the pane's bytes out (binary frames), and, for the login that
holds the keyboard, keys and pastes in (JSON text frames).

Frames to the page: JSON {"type": "hello", "cols", "rows"} before each snapshot (the bytes that
follow draw the whole screen), binary frames of output, {"type": "keyboard", "mine", "holder"}
when the grant changes, {"type": "refused", "reason"} for keys that went nowhere, {"type":
"ended"} when the session is gone. From the page: {"type": "keys", "data"} (what the browser's
terminal produced, sent as is), {"type": "paste", "text"} (sanitized, bracketed when the TUI
asked for it), {"type": "snapshot"} (start again from the screen).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings

from live.consumers import LabConsumer
from providers.errors import InvalidReply, SessionGone
from providers.sanitize import sanitize_text
from providers.tmux import Tmux, TmuxError
from runs.models import Run
from terminal import keyboard
from terminal.panestream import KEYS_MAX_BYTES, PaneStream, StreamClosed, Viewer, streams

log = logging.getLogger(__name__)

CLOSE_RUN_ENDED = 4410  # the run has ended, or its session is gone: nothing to show


class TerminalConsumer(LabConsumer):
    run_id: int
    stream: PaneStream | None = None
    viewer: Viewer | None = None
    sender: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        if not await self.authorize():
            return
        run = await self.route_run()
        if run is None:
            return
        if run.is_ended:
            await self.close(code=CLOSE_RUN_ENDED)
            return
        self.groups_to_join = [keyboard.terminal_group(self.run_id), *self.session_groups()]
        await self.join_and_accept()
        try:
            self.stream = await streams().open(run.tmux_socket, run.tmux_session)
        except StreamClosed:
            await self.send_json({"type": "ended"})
            await self.close(code=CLOSE_RUN_ENDED)
            return
        await self.send_keyboard()
        self.viewer = Viewer()
        await self.start_from_snapshot()
        self.sender = asyncio.create_task(self.forward())

    async def start_from_snapshot(self) -> None:
        assert self.stream is not None and self.viewer is not None
        snapshot = await self.stream.subscribe(self.viewer)
        await self.send_json({"type": "hello", "cols": snapshot.state.width, "rows": snapshot.state.height})
        await self.send(bytes_data=snapshot.screen)

    async def forward(self) -> None:
        """The pane's output to the page, a frame at a time; a page too far behind starts again
        from the screen as it is now."""
        assert self.viewer is not None
        try:
            while True:
                await self.viewer.ready.wait()
                if self.viewer.ended:
                    await self.send_json({"type": "ended"})
                    await self.close(code=CLOSE_RUN_ENDED)
                    return
                if self.viewer.behind:
                    await self.start_from_snapshot()
                    continue
                data = self.viewer.take()
                if data:
                    await self.send(bytes_data=data)
        except StreamClosed:
            await self.send_json({"type": "ended"})
            await self.close(code=CLOSE_RUN_ENDED)

    async def disconnect(self, code: int) -> None:
        await super().disconnect(code)
        if self.sender is not None:
            self.sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.sender
        if self.stream is not None:
            if self.viewer is not None:
                self.stream.unsubscribe(self.viewer)
            await streams().release(self.stream)
            self.stream = None

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        kind = content.get("type")
        if kind == "snapshot" and self.stream is not None:
            await self.start_from_snapshot()
            return
        if kind not in ("keys", "paste"):
            return
        value = content.get("data" if kind == "keys" else "text")
        if not isinstance(value, str) or not value:
            await self.refuse(1007, f"a {kind} frame without its text")
            return
        run = await self.holding_run()
        if run is None:
            await self.send_json(
                {"type": "refused", "reason": "Read-only: take the keyboard first. Nothing was typed."}
            )
            return
        try:
            if kind == "keys":
                data = value.encode()
                if len(data) > KEYS_MAX_BYTES:
                    raise InvalidReply(f"At most {KEYS_MAX_BYTES} bytes of keys at once: nothing was typed.")
                assert self.stream is not None
                await self.stream.send_keys(data)
            else:
                await self.paste(run, value)
        except (InvalidReply, SessionGone, StreamClosed, TmuxError) as exc:
            await self.send_json({"type": "refused", "reason": str(exc)})

    async def paste(self, run: Run, text: str) -> None:
        # Sanitized like a chat reply: no control sequence can end the bracketed paste early
        # and turn the rest into keys.
        text = sanitize_text(text, max_bytes=settings.LAB_REPLY_MAX_BYTES)
        await sync_to_async(Tmux(run.tmux_socket).paste, thread_sensitive=False)(run.tmux_session, text)

    @database_sync_to_async
    def holding_run(self) -> Run | None:
        """The run, if this socket's login holds its keyboard now (read per message: a grant
        given back or taken over stops the very next key)."""
        run = Run.objects.select_related("keyboard_user").filter(pk=self.run_id).first()
        if run is None or not keyboard.holds(run, self.session_key):
            return None
        if run.keyboard_user_id != self.scope["user"].pk:
            return None
        return run

    async def terminal_keyboard(self, event: dict[str, Any]) -> None:
        await self.send_keyboard()

    async def send_keyboard(self) -> None:
        run = await Run.objects.select_related("keyboard_user").filter(pk=self.run_id).afirst()
        if run is None:
            return
        mine = keyboard.holds(run, self.session_key)
        await self.send_json({"type": "keyboard", "mine": mine, "holder": run.keyboard_holder()})
