from django.urls import path

from push import views

app_name = "push"
urlpatterns = [
    # At the root: a service worker controls only the paths under its own.
    path("sw.js", views.service_worker, name="service_worker"),
    path("manifest.webmanifest", views.manifest, name="manifest"),
    path("account/notifications/", views.devices, name="devices"),
    path("account/notifications/<int:sub_id>/revoke/", views.revoke, name="revoke"),
    path("push/key/", views.key, name="key"),
    path("push/subscribe/", views.subscribe, name="subscribe"),
    path("push/unsubscribe/", views.unsubscribe, name="unsubscribe"),
]
