import pytest

# The live test's fixtures (a scripted model, a private HOME for the real CLI) are claude-code's.
from compat.claude_code.conftest import claude_home, scripted_model  # noqa: F401


@pytest.fixture
def run(fake_provider, git_repo, db):
    """A run that exists. A socket refused on its route is refused for the reason under test:
    on a run that does not exist the consumer closes with 4404 whatever the credentials."""
    from runs import services

    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/security")
