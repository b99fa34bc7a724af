"""The version ncclscope-analyze reports (--version): the project's one version, project(VERSION) in the top
CMakeLists.txt. The build writes it into _version.py beside this file (tools/analyze/CMakeLists.txt); run from
the source tree, where that file does not exist, it is read from CMakeLists.txt itself.
"""
import os
import re


def version():
    try:
        from ._version import VERSION  # written by the build
        return VERSION
    except ImportError:
        pass
    top = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "CMakeLists.txt")
    try:
        with open(top, encoding="utf-8") as f:
            m = re.search(r"project\(\s*ncclscope\s+VERSION\s+([0-9][0-9.]*)", f.read())
        if m:
            return m.group(1)
    except OSError:
        pass
    return "unknown"
