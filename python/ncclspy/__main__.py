"""The ``ncclspy`` console script: replaces this Python process with the
native command shipped in the package (os.execv), so the terminal, the
signals and the exit status are the command's own, as when it is
installed by meson or the Debian package.  The command finds the shim at
../lib/libncclspy.so from itself.
"""
import os
import signal
import sys

from . import command_path


def main():
    exe = command_path()
    # Python ignores SIGPIPE and SIGXFSZ at startup, and ignored signals
    # stay ignored across exec: give the command (and the job that
    # `ncclspy run` starts) the default actions a shell would.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execv(exe, ["ncclspy"] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("ncclspy: cannot run %s: %s\n" % (exe, e.strerror))
        return 126


if __name__ == "__main__":
    sys.exit(main())
