"""ncclspy, as a Python package: the ``ncclspy`` command and the shim
``libncclspy.so`` that it preloads into NCCL jobs, both native, shipped
inside this package (bin/ncclspy, lib/libncclspy.so).

The console script ``ncclspy`` (and ``python -m ncclspy``) runs the
command (see ``ncclspy.__main__``); ``shim_path()`` gives the shim's path
for those who set ``LD_PRELOAD`` themselves, as ``ncclspy shim-path``
prints it.
"""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def command_path():
    """The path of the native ``ncclspy`` command inside this package."""
    return os.path.join(_HERE, "bin", "ncclspy")


def shim_path():
    """The path of ``libncclspy.so`` inside this package (for LD_PRELOAD)."""
    return os.path.join(_HERE, "lib", "libncclspy.so")
