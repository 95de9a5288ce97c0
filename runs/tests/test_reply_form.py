"""The composer's refusals say what was wrong with the text."""

from __future__ import annotations

import pytest

from runs import services


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/form")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "Write something first."),
        ("\x00", "contains a NUL character"),
        ("\x00\x00\x00", "contains a NUL character"),
        ("hello\x00", "contains a NUL character"),
    ],
)
def test_a_refused_reply_says_what_was_wrong(authed_client, run, fake_provider, text, error):
    response = authed_client.post(f"/runs/{run.pk}/reply/", {"text": text})
    assert response.status_code == 422
    body = response.content.decode()
    assert error in body
    if error != "Write something first.":
        assert "Write something first." not in body
    assert fake_provider.sent == []
