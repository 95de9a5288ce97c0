"""The hook command of Claude Code runs started by a lab from before the one hook writer: their
inline settings name this file for the run's life (the agents outlive a restart of lab). It
hands over to providers/hook_writer.py, argument and all. Stdlib only."""

import os
import runpy
import sys

WRITER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hook_writer.py")

if __name__ == "__main__":
    sys.argv[0] = WRITER
    runpy.run_path(WRITER, run_name="__main__")
