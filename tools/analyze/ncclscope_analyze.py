#!/usr/bin/env python3
"""ncclscope-analyze: post-mortem of an NCCL job from the ncclscope dumps of all its ranks.

  ncclscope-analyze DIR_OR_FILE... [--json] [--trace OUT.json]

The work is in the ncclscope_analysis package: next to this file (the build copies both into bin/), or, where
installed (docs/install.md), in <prefix>/share/ncclscope/python/ncclscope-analyze/ (a pip-installable copy).
Exit status: 0 healthy, 1 a problem was found (hang, missing rank, straggler), 2 bad input or usage (the file
and field are named), 3 internal error, 4 output not written (--help says more).
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree and bin/ free of __pycache__
_here = os.path.dirname(os.path.realpath(__file__))
for _where in (_here, os.path.join(_here, os.pardir, "share", "ncclscope", "python", "ncclscope-analyze")):
    if os.path.isfile(os.path.join(_where, "ncclscope_analysis", "cli.py")):
        sys.path.insert(0, os.path.normpath(_where))
        break

from ncclscope_analysis.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
