from django.contrib import admin

from accounts.models import LoginLink


@admin.register(LoginLink)
class LoginLinkAdmin(admin.ModelAdmin[LoginLink]):
    list_display = ["user", "created_at", "used_at"]
    readonly_fields = ["user", "digest", "created_at", "used_at"]
