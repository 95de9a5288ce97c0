"""The one-time first-login link, so a newcomer is never locked out (Jupyter's token URL)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import models
from django.utils import timezone

LINK_LIFETIME = timedelta(hours=24)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class LoginLinkQuerySet(models.QuerySet["LoginLink"]):
    def redeemable(self) -> LoginLinkQuerySet:
        return self.filter(used_at__isnull=True, created_at__gte=timezone.now() - LINK_LIFETIME)


class LoginLink(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    digest = models.CharField(max_length=64, unique=True)  # only the hash is stored
    created_at = models.DateTimeField(default=timezone.now)
    used_at = models.DateTimeField(null=True, blank=True)

    objects = LoginLinkQuerySet.as_manager()

    def __str__(self) -> str:
        return f"login link for {self.user} ({'used' if self.used_at else 'open'})"

    @classmethod
    def issue(cls, user: User) -> str:
        token = secrets.token_urlsafe(32)
        cls.objects.create(user=user, digest=_digest(token))
        return token

    @classmethod
    def peek(cls, token: str) -> LoginLink | None:
        """The open link for `token`, without using it (the page names whom it logs in)."""
        return cls.objects.redeemable().select_related("user").filter(digest=_digest(token)).first()

    @classmethod
    def redeem(cls, token: str) -> LoginLink | None:
        """Marks the link used in the same UPDATE that finds it, so two clicks log in once."""
        now = timezone.now()
        claimed = cls.objects.redeemable().filter(digest=_digest(token)).update(used_at=now)
        if not claimed:
            return None
        return cls.objects.select_related("user").get(digest=_digest(token))


class PasswordCheck(models.Model):
    """Whether a user's password passed AUTH_PASSWORD_VALIDATORS when it was set. The hash
    alone cannot say, and `serve` refuses a non-loopback bind without a strong password."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="password_check"
    )
    # The hash the verdict is about: a password changed any other way voids it.
    password_hash = models.CharField(max_length=128)
    strong = models.BooleanField()
    checked_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.user}: {'strong' if self.strong else 'weak'} password"
