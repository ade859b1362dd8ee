# Sourced by the device scripts, from the top of the tree: $top, $out
# (OUT, default ./gpu-out), NVLink multicast off (shared hosts), and the
# Debian packages carried in .dev/debs (json-c, libunwind, libdw and
# their -dev parts; the GPU host has none) unpacked into .dev/root, with
# pkg-config and the loader pointed at it.
top=$PWD
out=${OUT:-$top/gpu-out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$top/.dev/root
mkdir -p "$R"
for d in "$top"/.dev/debs/*.deb; do dpkg -x "$d" "$R"; done
for pc in "$R"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$R"/usr/share/pkgconfig/*.pc; do
  [ -f "$pc" ] && sed -i "s#=/usr#=$R/usr#" "$pc"
done
export PKG_CONFIG_PATH=$R/usr/lib/x86_64-linux-gnu/pkgconfig:$R/usr/share/pkgconfig
export LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
