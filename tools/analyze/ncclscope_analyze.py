#!/usr/bin/env python3
"""ncclscope-analyze: post-mortem of an NCCL job from the ncclscope dumps of all its ranks.

  ncclscope-analyze DIR_OR_FILE... [--json] [--trace OUT.json]

The work is in the ncclscope_analysis package next to this file (the build copies both into bin/).
Exit status: 0 healthy, 1 a problem was found (hang, missing rank, straggler), 2 bad input or usage (the file
and field are named), 3 internal error, 4 output not written (--help says more).
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree and bin/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from ncclscope_analysis.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
