from django.urls import path

from auth_flows import views

app_name = "auth_flows"
urlpatterns = [
    path("", views.provider_list, name="providers"),
]
