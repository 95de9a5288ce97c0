# The live test's fixtures (a scripted model, a private HOME for the real CLI) come from compat/.
from compat.conftest import claude_home, scripted_model  # noqa: F401
