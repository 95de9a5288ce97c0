import pytest

from tests.factories import RunFactory


@pytest.mark.django_db
def test_it_lists_filters_and_searches_runs(authed_client):
    RunFactory(name="alpha", branch="lab/alpha")
    RunFactory(name="beta", branch="lab/beta")
    response = authed_client.get("/admin/runs/run/", {"q": "alpha"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "alpha" in body and "lab/beta" not in body
    assert authed_client.get("/admin/runs/run/", {"ended_at__isempty": "1"}).status_code == 200


@pytest.mark.django_db
def test_it_shows_a_run(authed_client):
    run = RunFactory()
    assert authed_client.get(f"/admin/runs/run/{run.pk}/change/").status_code == 200
