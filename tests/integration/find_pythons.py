"""Prints VERSION=PATH for each CPython the shim reads Python call sites
of (3.10 to 3.13) found on this machine: /usr/bin (Debian's), then
/usr/local/bin, then pyenv's versions.  meson registers one
dlsym-case-ctypes_pysite-pyVERSION test per line."""
import glob
import os

root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
for v in ("3.10", "3.11", "3.12", "3.13"):
    found = ["/usr/bin/python" + v, "/usr/local/bin/python" + v]
    found += sorted(glob.glob(f"{root}/versions/{v}.*/bin/python{v}"))
    for c in found:
        if os.access(c, os.X_OK):
            print(f"{v}={c}")
            break
