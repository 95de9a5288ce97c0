"""Judge a password while it is still in the clear: AbstractBaseUser.set_password keeps the
raw value on the instance until save(), so a post_save handler sees it exactly once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.password_validation import (
    CommonPasswordValidator,
    MinimumLengthValidator,
    NumericPasswordValidator,
)
from django.core.exceptions import ValidationError
from django.db.models.signals import post_save

from accounts.models import PasswordCheck

# lab's floor for "strong", whatever AUTH_PASSWORD_VALIDATORS says: a remote bind depends on it.
FLOOR = (MinimumLengthValidator(12), CommonPasswordValidator(), NumericPasswordValidator())


def record_password_strength(sender: type, instance: Any, **kwargs: Any) -> None:
    raw = getattr(instance, "_password", None)
    if raw is None:
        return
    validators = [*password_validation.get_default_password_validators(), *FLOOR]
    try:
        password_validation.validate_password(raw, instance, password_validators=validators)
    except ValidationError:
        strong = False
    else:
        strong = True
    PasswordCheck.objects.update_or_create(
        user=instance, defaults={"password_hash": instance.password, "strong": strong}
    )


def connect() -> None:
    post_save.connect(record_password_strength, sender=get_user_model(), dispatch_uid="lab-password-strength")


def password_is_strong(user: Any) -> bool:
    """The user's current password passed the validators when it was set."""
    if not user.has_usable_password():
        return False
    check = PasswordCheck.objects.filter(user=user).first()
    return check is not None and check.strong and check.password_hash == user.password
