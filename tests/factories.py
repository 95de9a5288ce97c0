import factory
from django.contrib.auth import get_user_model

from runs.models import Run


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"operator{n}")
    password = factory.django.Password("correct horse battery staple")
    is_staff = True
    is_superuser = True


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    name = factory.Sequence(lambda n: f"run-{n}")
    provider_id = "fake"
    repository = "/tmp/repo"
    worktree = "/tmp/repo"
    branch = factory.Sequence(lambda n: f"lab/run-{n}")
    tmux_socket = "labtest"
    tmux_session = factory.Sequence(lambda n: f"lab-test-{n}")
