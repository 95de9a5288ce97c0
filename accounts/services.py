from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from accounts.models import LoginLink

OPERATOR_USERNAME = "operator"


def operator_bootstrap() -> tuple[AbstractBaseUser, str] | None:
    """On a fresh install: create the operator (no usable password yet) and return a one-time
    login token. With any active superuser present, does nothing."""
    User = get_user_model()
    if User.objects.filter(is_superuser=True, is_active=True).exists():
        return None
    user, _ = User.objects.get_or_create(
        username=OPERATOR_USERNAME, defaults={"is_staff": True, "is_superuser": True}
    )
    if not user.is_superuser:
        user.is_staff = user.is_superuser = True
    user.set_unusable_password()
    user.save()
    return user, LoginLink.issue(user)


def login_link_issue(*, username: str) -> str:
    user = get_user_model().objects.get(username=username, is_active=True)
    return LoginLink.issue(user)
