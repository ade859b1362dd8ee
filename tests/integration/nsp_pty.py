#!/usr/bin/env python3
"""nsp_pty.py - runs a command on a pseudo-terminal, for tests of what
ncclspy draws only on a terminal (progress, watch's status line).

    nsp_pty.py [--stderr-only] OUT -- COMMAND [ARGS...]

The command's standard error (and standard output, unless --stderr-only:
then it goes to OUT.stdout) is the pty, 120 columns wide; every byte read
from it is appended to OUT as it comes.  Exits with the command's status."""
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios


def main():
    args = sys.argv[1:]
    stderr_only = args and args[0] == "--stderr-only"
    if stderr_only:
        args = args[1:]
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: nsp_pty.py [--stderr-only] OUT -- COMMAND...")
    out, cmd = args[0], args[2:]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    stdout = open(out + ".stdout", "wb") if stderr_only else slave
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=slave, close_fds=True)
    os.close(slave)
    with open(out, "wb", buffering=0) as f:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: every holder of the slave closed it
                break
            if not data:
                break
            f.write(data)
    sys.exit(proc.wait())


if __name__ == "__main__":
    main()
