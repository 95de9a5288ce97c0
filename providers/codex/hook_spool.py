"""The hook command of Codex runs started by a lab from before the one hook writer: such a Codex
read its hooks when it started and runs this file for its life (the agents outlive a restart of
lab), with the spool in LAB_CODEX_SPOOL. It hands over to providers/hook_writer.py. Stdlib only."""

import os
import runpy
import sys

WRITER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hook_writer.py")

if __name__ == "__main__":
    if os.environ.get("LAB_CODEX_SPOOL") and not os.environ.get("LAB_HOOK_SPOOL"):
        os.environ["LAB_HOOK_SPOOL"] = os.environ["LAB_CODEX_SPOOL"]
    sys.argv[0] = WRITER
    runpy.run_path(WRITER, run_name="__main__")
