from django.urls import path

from accounts import views

app_name = "accounts"
urlpatterns = [
    path("once/<str:token>/", views.login_link, name="login_link"),
    path("password/", views.set_password, name="set_password"),
]
