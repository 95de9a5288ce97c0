from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from accounts.views import RateLimitedLoginView

urlpatterns = [
    path("login/", RateLimitedLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/", include("accounts.urls")),
    path("admin/", admin.site.urls),
    path("providers/", include("auth_flows.urls")),
    path("", include("push.urls")),
    path("", include("terminal.urls")),
    path("", include("runs.urls")),
]

handler400 = "lab.errors.bad_request"
