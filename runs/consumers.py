from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

# Close codes in the 4000 range are the application's own (RFC 6455 §7.4.2).
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404

LAB_GROUP = "lab"  # every open lab page: provider.auth.changed and the like


class LabConsumer(AsyncJsonWebsocketConsumer):
    """Base: authorize, join groups, forward. Refuses anonymous sockets before accepting."""

    groups_to_join: list[str]

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.groups_to_join = [LAB_GROUP]
        await self.join_and_accept()

    async def join_and_accept(self) -> None:
        for group in self.groups_to_join:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "groups_to_join", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def lab_html(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["html"])
