# Sourced by the device scripts: the Debian packages carried in .dev/debs
# (json-c, libunwind, libdw and their -dev parts; the GPU host has none)
# unpacked into .dev/root, with pkg-config and the loader pointed at it.
R=$top/.dev/root
mkdir -p "$R"
for d in "$top"/.dev/debs/*.deb; do dpkg -x "$d" "$R"; done
for pc in "$R"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$R"/usr/share/pkgconfig/*.pc; do
  [ -f "$pc" ] && sed -i "s#=/usr#=$R/usr#" "$pc"
done
export PKG_CONFIG_PATH=$R/usr/lib/x86_64-linux-gnu/pkgconfig:$R/usr/share/pkgconfig
export LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
