"""lab's settings plus the test-only LAB_LOGIN_EXTRA_ENV, for the browser login test's server.

LAB_LOGIN_EXTRA_ENV has no environment variable in lab (it is never set in production); this
module, used only as DJANGO_SETTINGS_MODULE of the browser suite's login server, reads it from
LAB_TEST_LOGIN_EXTRA_ENV (a JSON object: HTTPS_PROXY and NODE_EXTRA_CA_CERTS pointing the real
`claude auth login` at compat/claude_code/login_proxy.py).
"""

import json
import os

from lab.settings import *  # noqa: F403

LAB_LOGIN_EXTRA_ENV: dict[str, str] = json.loads(os.environ.get("LAB_TEST_LOGIN_EXTRA_ENV", "{}"))
