"""A runner joins only as a registered host, with that host's own credential."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from hosts.join import JoinRefused, join
from hosts.models import Host

pytestmark = pytest.mark.django_db


def add(name: str) -> str:
    out = io.StringIO()
    call_command("host", "add", name, stdout=out)
    return out.getvalue().split("LAB_RUNNER_TOKEN=", 1)[1].strip()


def test_a_registered_host_joins_with_its_credential_and_no_other():
    token = add("build-2")
    other = add("build-3")
    assert join("build-2", token).name == "build-2"
    assert Host.objects.get(name="build-2").started_at is not None
    with pytest.raises(JoinRefused, match="not host 'build-2'"):
        join("build-2", other)
    with pytest.raises(JoinRefused, match="not registered"):
        join("build-9", token)


@pytest.mark.parametrize("token", ["", "changeme", "secret", "short-token"])
def test_an_empty_default_or_short_credential_is_refused_whatever_the_database_says(token):
    Host.objects.create(name="build-2", credential="")
    with pytest.raises(JoinRefused):
        join("build-2", token)


def test_the_credential_is_stored_only_as_a_hash_and_rotate_replaces_it():
    token = add("build-2")
    assert token not in Host.objects.get(name="build-2").credential
    out = io.StringIO()
    call_command("host", "rotate", "build-2", stdout=out)
    fresh = out.getvalue().split("LAB_RUNNER_TOKEN=", 1)[1].strip()
    with pytest.raises(JoinRefused):
        join("build-2", token)
    assert join("build-2", fresh)
    with pytest.raises(CommandError, match="exists"):
        call_command("host", "add", "build-2", stdout=io.StringIO())
    with pytest.raises(CommandError, match="lowercase"):
        call_command("host", "add", "Build 2; rm -rf /", stdout=io.StringIO())


def test_a_runner_will_not_start_without_redis_and_postgresql(settings):
    settings.REDIS_URL = ""
    with pytest.raises(CommandError, match="REDIS_URL"):
        call_command("runner")
