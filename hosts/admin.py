from django.contrib import admin

from hosts.models import Host


@admin.register(Host)
class HostAdmin(admin.ModelAdmin):
    list_display = ["name", "last_seen", "load", "cpus", "started_at"]
    readonly_fields = ["credential", "last_seen", "load", "cpus", "started_at", "created_at"]
