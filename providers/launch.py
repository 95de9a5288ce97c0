"""The pane's first program: read the agent's environment from a file, delete the file, exec.

Run as `python -I -S launch.py ENV_FILE PROGRAM ARG…` by Tmux.new_session. The environment
(API keys included) never appears on a command line: tmux keeps the argv of the command that
started its server for the server's whole life, and /proc/<pid>/cmdline is world-readable.
The file is 0600 in a private place and gone before the agent starts. Standard library only,
no site packages (-S): this runs before anything of lab's is importable.
"""

import contextlib
import json
import os
import sys


def main() -> None:
    env_file, program, *args = sys.argv[1:]
    try:
        with open(env_file, "rb") as f:
            env = json.loads(f.read())
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(env_file)
    # Like `env -i K=V program`: exactly this environment, PROGRAM looked up on its PATH.
    try:
        os.execvpe(program, [program, *args], env)
    except OSError as exc:
        sys.stderr.write(f"lab could not start {program}: {exc.strerror}\n")
        sys.exit(127)  # what env(1) exits with for a program it cannot run


if __name__ == "__main__":
    main()
