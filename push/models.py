"""A browser's push subscription: one per browser that clicked "Notify me", listed and
revocable on the account page (push/views.py)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.db import models
from django.utils import timezone


class Subscription(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="push_subscriptions"
    )
    # The push service's URL for this browser (RFC 8030); a capability, shown only in part.
    endpoint = models.URLField(max_length=2048, unique=True)
    p256dh = models.CharField(max_length=128)  # the browser's ECDH public key (RFC 8291)
    auth = models.CharField(max_length=64)  # its authentication secret
    label = models.CharField(max_length=200, blank=True)  # which browser, from its User-Agent
    created_at = models.DateTimeField(default=timezone.now)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"push to {self.label or 'a browser'} for {self.user}"

    def info(self) -> dict[str, object]:
        """What pywebpush sends to."""
        return {"endpoint": self.endpoint, "keys": {"p256dh": self.p256dh, "auth": self.auth}}

    @property
    def service(self) -> str:
        """The push service's host (which vendor relays it), never the whole capability URL."""
        return urlsplit(self.endpoint).hostname or ""
