import pytest

from tests.factories import RunFactory


@pytest.mark.django_db
def test_it_knows_its_attach_command_and_group():
    run = RunFactory(tmux_socket="lab", tmux_session="lab-7-fix")
    assert run.attach_command == "tmux -L lab attach -t =lab-7-fix"
    assert run.group_name == f"run.{run.pk}"
    assert not run.is_ended


@pytest.mark.django_db
def test_it_keeps_nothing_about_messages():
    fields = {f.name for f in RunFactory._meta.model._meta.get_fields()}
    assert not {"messages", "content", "text", "history"} & fields
    assert "transcript_path" in fields
