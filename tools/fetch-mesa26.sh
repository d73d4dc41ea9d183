#!/usr/bin/env bash
# Fetches Mesa 26 lavapipe (trixie-backports) and trixie's glslang and spirv-tools into a directory
# (default build/mesa26) without installing anything, so cooperative-matrix kernels can be compiled
# and the GPU tests run on a lavapipe that has VK_KHR_cooperative_matrix:
#   bash tools/fetch-mesa26.sh build/mesa26
#   cmake -S . -B build -DVKATTN_GLSLANG_COOPMAT=$PWD/build/mesa26/glslangValidator \
#         -DVKATTN_TEST_LAUNCHER=$PWD/build/mesa26/run      (spirv-val is found beside the glslang)
#   build/mesa26/run build/vkattn info
# Like tools/fetch-mesa25.sh: a private apt configuration in DIR/apt (sources, lists, cache, an empty
# dpkg status), `apt-get download`, `dpkg -x` into DIR/root; /etc/apt, /var/lib/apt and dpkg's
# database are only ever read. Prints one summary line; on any failure prints apt's log and exits
# non-zero. Reruns with the same versions do no work.
#
# These programs need trixie's glibc (2.41) and libstdc++, so they run through trixie's dynamic
# loader (DIR/root/.../ld-linux-x86-64.so.2 --library-path ...): the `run` wrapper starts any
# program that way, bookworm-built ones included, with the Vulkan loader pointed at Mesa 26's
# lavapipe alone. Every other library resolves from this machine's /lib. The whole process then runs
# under trixie's glibc, which is why the sanitizer build never runs through it.
set -euo pipefail

# shellcheck source=tools/private-apt.sh
. "$(dirname "$0")/private-apt.sh"
fetch_start fetch-mesa26 "${1:-"$(dirname "$0")/../build/mesa26"}"

# The compiler bundle (a cooperative-matrix shader build), then the driver bundle (Mesa 26 lavapipe
# with what it links that bookworm lacks or has too old). trixie's Khronos validation layer knows
# VK_KHR_cooperative_matrix (bookworm's 1.3.239 does not) and needs nothing more.
compiler=(glslang-tools spirv-tools libc6 libstdc++6 libgcc-s1)
driver=(mesa-vulkan-drivers/trixie-backports libllvm19 libdrm2 libdisplay-info2 libvulkan1)
layers=(vulkan-validationlayers)

mkdir -p "$dir/debs"
private_apt "$apt" "deb [signed-by=$private_apt_key] http://deb.debian.org/debian trixie main" \
  "deb [signed-by=$private_apt_key] http://deb.debian.org/debian trixie-backports main"

apt-get update -q --error-on=any >>"$log" 2>&1 || fail "apt-get update failed: is deb.debian.org reachable?"
mesa=$(apt-cache madison mesa-vulkan-drivers 2>>"$log" | awk '/trixie-backports/ {print $3; exit}')
if ! { dpkg --compare-versions "${mesa:-0}" ge 26~ && dpkg --compare-versions "$mesa" lt 27~; }; then
  fail "trixie-backports offers mesa-vulkan-drivers '$mesa', not 26.x"
fi
glslang=$(apt-cache madison glslang-tools 2>>"$log" | awk '{print $3; exit}')
dpkg --compare-versions "${glslang:-0}" ge 15~ || fail "trixie offers glslang-tools '$glslang', not 15 or later"
want="mesa-vulkan-drivers=$mesa glslang-tools=$glslang"

stamp="$dir/stamp"
if [ -f "$stamp" ] && [ "$(head -n1 "$stamp")" = "$want" ] && [ -x "$dir/run" ] && [ -f "$dir/lvp_icd.json" ]; then
  echo "fetch-mesa26: $(tr '\n' ' ' <"$stamp")already in $dir"
  exit 0
fi

rm -rf "$root" "$dir"/debs/*.deb "$stamp"
for p in "${compiler[@]}" "${driver[@]}" "${layers[@]}"; do
  (cd "$dir/debs" && apt-get download -q "$p") >>"$log" 2>&1 || fail "download of $p failed"
done
versions="$want"
for f in "$dir"/debs/*.deb; do
  dpkg -x "$f" "$root"
  versions+=$'\n'"$(dpkg-deb -f "$f" Package)=$(dpkg-deb -f "$f" Version)"
done
libdir="$root/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
ldso=$(find "$root" -name 'ld-linux*.so.*' -type f -o -name 'ld-linux*.so.*' -type l | head -n1)
lvp="$libdir/libvulkan_lvp.so"
[ -n "$ldso" ] || fail "no dynamic loader in trixie's libc6"
[ -f "$lvp" ] || fail "no libvulkan_lvp.so in mesa-vulkan-drivers $mesa"
# trixie's libraries first, then this machine's own (/lib, /usr/lib: zlib, zstd, xcb, wayland, ...).
search="$libdir:/lib/$(basename "$libdir"):/usr/lib/$(basename "$libdir")"

# The ICD file names this lavapipe only, so the system's Mesa 22 is not enumerated next to it;
# VK_ICD_FILENAMES too for loaders older than VK_DRIVER_FILES. The layer's manifest is rewritten
# to the unpacked library.
api=$(sed -n 's/.*"api_version": *"\([^"]*\)".*/\1/p' "$root/usr/share/vulkan/icd.d/lvp_icd.json")
cat >"$dir/lvp_icd.json" <<EOS
{
    "file_format_version": "1.0.0",
    "ICD": {
        "library_path": "$lvp",
        "api_version": "$api"
    }
}
EOS
mkdir -p "$dir/layers"
layer_json=$(find "$root/usr/share/vulkan" -name 'VkLayer_khronos_validation.json' | head -n1)
[ -n "$layer_json" ] || fail "no VkLayer_khronos_validation.json in vulkan-validationlayers"
sed "s#\"library_path\": *\"[^\"]*\"#\"library_path\": \"$libdir/libVkLayer_khronos_validation.so\"#" \
  "$layer_json" >"$dir/layers/VkLayer_khronos_validation.json"

cat >"$dir/run" <<EOS
#!/bin/sh
# Runs a program (bookworm-built or trixie's) under trixie's glibc, on Mesa $mesa lavapipe, with
# trixie's validation layer (written by tools/fetch-mesa26.sh).
export VK_DRIVER_FILES="$dir/lvp_icd.json" VK_ICD_FILENAMES="$dir/lvp_icd.json"
export VK_LAYER_PATH="$dir/layers" VK_ADD_LAYER_PATH="$dir/layers"
prog=\$1; shift
case "\$prog" in */*) ;; *) prog=\$(command -v "\$prog") ;; esac
exec "$ldso" --library-path "$search" "\$prog" "\$@"
EOS
for tool in glslangValidator spirv-val; do
  cat >"$dir/$tool" <<EOS
#!/bin/sh
# trixie's $tool, run under trixie's glibc (written by tools/fetch-mesa26.sh)
exec "$ldso" --library-path "$search" "$root/usr/bin/$tool" "\$@"
EOS
done
chmod +x "$dir/run" "$dir/glslangValidator" "$dir/spirv-val"

# Each piece must start: the compilers, and lavapipe's own libraries resolved.
"$dir/glslangValidator" --version >>"$log" 2>&1 || fail "trixie's glslangValidator does not run here"
"$dir/spirv-val" --version >>"$log" 2>&1 || fail "trixie's spirv-val does not run here"
"$ldso" --list --library-path "$search" "$lvp" >"$dir/ldd.txt" 2>&1 || fail "lavapipe's libraries do not resolve"
if grep -E 'not found' "$dir/ldd.txt" >>"$log"; then fail "lavapipe links a library this machine lacks"; fi
printf '%s\n' "$versions" >"$stamp"
echo "fetch-mesa26: $(head -n1 "$stamp") and $(($(wc -l <"$stamp") - 1)) packages fetched into $dir"
