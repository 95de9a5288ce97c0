from django.urls import path

from auth_flows import views

app_name = "auth_flows"
urlpatterns = [
    path("", views.provider_list, name="providers"),
    path("<str:provider_id>/auth/status", views.auth_status, name="auth_status"),
    path("<str:provider_id>/auth/login/start", views.login_start, name="login_start"),
    path("<str:provider_id>/auth/login/code", views.login_code, name="login_code"),
    path("<str:provider_id>/auth/logout", views.logout, name="logout"),
]
