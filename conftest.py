"""Suite-wide: an isolated data dir and tmux socket per session, so tests never touch the
operator's lab, and the settings lab reads at import time are set before Django loads."""

import os
import tempfile

_tmp = tempfile.mkdtemp(prefix="lab-test-")
os.environ.setdefault("LAB_DATA_DIR", os.path.join(_tmp, "data"))
os.environ.setdefault("LAB_TMUX_SOCKET", f"labtest-{os.getpid()}")
os.environ.setdefault("LAB_AGENT_HOME", os.path.join(_tmp, "agent-home"))
