#!/usr/bin/env python3
"""Retags a wheel of ncclspy as py3-none-<platform>.

meson-python before 0.13 tags any wheel with files in platlib for the
Python that built it (cp311-cp311-...), as if it held an extension
module.  ncclspy's wheel holds a C command, the shim and a launcher in
pure Python: nothing that uses Python's ABI, so one wheel serves every
CPython 3 of the platform.  This rewrites the WHEEL file's tag, its line
in RECORD (sha256, size) and the file name.  Standard library only.

    python3 python/retag_wheel.py dist/ncclspy-0.1.0-cp311-cp311-linux_x86_64.whl
prints the new path; a wheel already tagged py3-none is left as it is.
"""
import base64
import hashlib
import os
import sys
import zipfile


def retag(path):
    base = os.path.basename(path)[: -len(".whl")]
    name, version, py, abi, plat = base.split("-")
    if (py, abi) == ("py3", "none"):
        return path
    tag = "py3-none-" + plat
    out = os.path.join(os.path.dirname(path), "%s-%s-%s.whl" % (name, version, tag))
    with zipfile.ZipFile(path) as src:
        items = [(i, src.read(i.filename)) for i in src.infolist()]
    wheel_name = "%s-%s.dist-info/WHEEL" % (name, version)
    record_name = "%s-%s.dist-info/RECORD" % (name, version)
    files = dict((i.filename, data) for i, data in items)
    lines = [("Tag: " + tag if l.startswith("Tag: ") else l) for l in files[wheel_name].decode().splitlines()]
    wheel = ("\n".join(lines) + "\n").encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(wheel).digest()).rstrip(b"=").decode()
    record = []
    for l in files[record_name].decode().splitlines():
        if l.split(",")[0] == wheel_name:
            l = "%s,sha256=%s,%d" % (wheel_name, digest, len(wheel))
        record.append(l)
    with zipfile.ZipFile(out + ".part", "w", zipfile.ZIP_DEFLATED) as dst:
        for info, data in items:
            if info.filename == wheel_name:
                data = wheel
            elif info.filename == record_name:
                data = ("\n".join(record) + "\n").encode()
            dst.writestr(info, data)
    os.replace(out + ".part", out)
    os.unlink(path)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].endswith(".whl"):
        sys.exit("usage: retag_wheel.py WHEEL")
    print(retag(sys.argv[1]))
