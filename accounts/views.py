from __future__ import annotations

import time

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView, redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts.forms import OperatorPasswordChangeForm, OperatorPasswordForm
from accounts.models import LoginLink
from accounts.ratelimit import login_attempt_check, login_failed, login_succeeded

# A session logged in by a one-time link may set the password without the current one for this
# long; after that (or once it has set one) it needs the current password like any other.
LINK_LOGIN_KEY = "lab_link_login_at"
LINK_GRACE_S = 30 * 60


class RateLimitedLoginView(LoginView):
    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        username = str(request.POST.get("username", ""))
        self.verdict = login_attempt_check(request, username)
        if not self.verdict.allowed:
            form = self.get_form()
            form.add_error(
                None,
                f"{self.verdict.reason} Try again in {_duration(self.verdict.retry_after)}. On the "
                "machine lab runs on, `make login-link` prints a one-time link that logs you in now.",
            )
            response = self.render_to_response(self.get_context_data(form=form), status=429)
            response["Retry-After"] = str(self.verdict.retry_after)
            return response
        return super().post(request, *args, **kwargs)

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_valid(form)
        login_succeeded(self.request, response, form.get_user().get_username())
        return response

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        login_failed(self.request, str(self.request.POST.get("username", "")), self.verdict)
        return super().form_invalid(form)


def _duration(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{(seconds + 59) // 60} minutes"


@login_not_required
@never_cache
def admin_login(request: HttpRequest, extra_context: object = None) -> HttpResponse:
    """Stands in for admin's login view (accounts.apps): one login form, with the rate limit."""
    if request.user.is_authenticated:
        # Logged in without admin rights: the login form would only send them back here.
        return HttpResponseForbidden("This account cannot use the admin.")
    return redirect_to_login(request.GET.get("next") or reverse("admin:index"), reverse("login"))


@login_not_required
@never_cache
@require_http_methods(["GET", "POST"])
def login_link(request: HttpRequest, token: str) -> HttpResponse:
    # GET shows a button, POST redeems: a link preview or prefetch must not burn the link.
    if request.method == "GET":
        link = LoginLink.peek(token)
        if link is None:
            return render(request, "accounts/login_link.html", {"invalid": True}, status=410)
        return render(request, "accounts/login_link.html", {"username": link.user.get_username()})
    link = LoginLink.redeem(token)
    if link is None:
        return render(request, "accounts/login_link.html", {"invalid": True}, status=410)
    login(request, link.user, backend="django.contrib.auth.backends.ModelBackend")
    # The link is the way back in when the password is forgotten: this session may set a new
    # one without the old, for a short while.
    request.session[LINK_LOGIN_KEY] = time.time()
    response = redirect("accounts:set_password")
    # The link is the way back in during a flood of wrong passwords: this browser is trusted
    # from now on (accounts/ratelimit.py).
    login_succeeded(request, response, link.user.get_username())
    return response


@never_cache
@require_http_methods(["GET", "POST"])
def set_password(request: HttpRequest) -> HttpResponse:
    user = request.user
    assert isinstance(user, AbstractBaseUser)  # LoginRequiredMiddleware: never anonymous here
    fresh_link = time.time() - float(request.session.get(LINK_LOGIN_KEY, 0)) < LINK_GRACE_S
    needs_current = user.has_usable_password() and not fresh_link
    form_class = OperatorPasswordChangeForm if needs_current else OperatorPasswordForm
    form = form_class(user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        request.session.pop(LINK_LOGIN_KEY, None)
        messages.success(request, "Password set.")
        return redirect("runs:list")
    return render(request, "accounts/set_password.html", {"form": form, "username": user.get_username()})
