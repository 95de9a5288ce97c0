from __future__ import annotations

from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm


class OperatorPasswordForm(SetPasswordForm):
    """Django's form puts the password validators' verdict (too short, too common) under the
    confirmation field; here it sits under the password it is about. A mismatch stays under
    the confirmation."""

    def clean(self) -> dict[str, object]:
        self.validate_passwords("new_password1", "new_password2")
        self.validate_password_for_user(self.user, "new_password1")
        return self.cleaned_data


class OperatorPasswordChangeForm(PasswordChangeForm, OperatorPasswordForm):
    """The same, asking for the current password first: a session alone (a browser left open,
    a stolen cookie) must not be enough to take the account over."""
