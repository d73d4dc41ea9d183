#!/usr/bin/env bash
# Fetches Mesa 25 lavapipe from bookworm-backports into a directory (default build/mesa25) without
# installing anything, so the GPU tests can run a second time on a newer driver:
#   bash tools/fetch-mesa25.sh build/mesa25 && . build/mesa25/env.sh && ctest --test-dir build -L gpu
# A private apt configuration (sources, lists, cache, an empty dpkg status) lives in DIR/apt, and the
# packages are unpacked with `dpkg -x` into DIR/root: /etc/apt, /var/lib/apt and dpkg's database are
# only ever read. Prints one summary line; on any failure prints apt's log and exits non-zero, so CI
# never skips the second driver silently. Reruns with the same backports version do no work.
set -euo pipefail

# shellcheck source=tools/private-apt.sh
. "$(dirname "$0")/private-apt.sh"
fetch_start fetch-mesa25 "${1:-"$(dirname "$0")/../build/mesa25"}"

# Private apt (tools/private-apt.sh). Only backports is listed: the rest of what lavapipe links
# comes from this machine (tools/install-deps.sh installed Mesa 22, which pulls in the same
# libraries), and apt-get download resolves nothing.
arch=$(dpkg --print-architecture)
mkdir -p "$dir/debs"
private_apt "$apt" "deb [signed-by=$private_apt_key] http://deb.debian.org/debian bookworm-backports main"

apt-get update -q --error-on=any >>"$log" 2>&1 || fail "apt-get update failed: is deb.debian.org reachable?"
mesa=$(apt-cache policy mesa-vulkan-drivers 2>>"$log" | awk '/Candidate:/ {print $2}')
if ! { dpkg --compare-versions "${mesa:-0}" ge 25~ && dpkg --compare-versions "$mesa" lt 26~; }; then
  fail "bookworm-backports offers mesa-vulkan-drivers '$mesa', not 25.x"
fi

stamp="$dir/stamp"
if [ -f "$stamp" ] && [ "$(head -n1 "$stamp")" = "mesa-vulkan-drivers=$mesa" ] && [ -f "$dir/env.sh" ] \
   && [ -f "$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' "$dir/lvp_icd.json" 2>/dev/null)" ]; then
  echo "fetch-mesa25: $(tr '\n' ' ' <"$stamp")already in $dir (. $dir/env.sh)"
  exit 0
fi

rm -rf "$root" "$dir"/debs/*.deb "$stamp"
(cd "$dir/debs" && apt-get download -q "mesa-vulkan-drivers=$mesa") >>"$log" 2>&1 \
  || fail "download of mesa-vulkan-drivers $mesa failed"
deb=$(ls "$dir"/debs/mesa-vulkan-drivers_*.deb)
dpkg -x "$deb" "$root"
lvp=$(find "$root" -name libvulkan_lvp.so -type f)
[ -n "$lvp" ] || fail "no libvulkan_lvp.so in $deb"
libdir=$(dirname "$lvp")

# Which libraries to take from backports too: of the libraries lavapipe links (DT_NEEDED; Mesa's
# other drivers in the package are never loaded), those whose package on this machine is older
# than mesa-vulkan-drivers' Depends asks for. In 25.0.7 that is libdrm2 only: libLLVM-15 is
# bookworm's own, and libdrm-amdgpu1 is for radv.
depends=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/^ *//')
extra=()
for soname in $(readelf -d "$lvp" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  owner=$(dpkg -S "*/$(basename "$libdir")/$soname" 2>/dev/null | sed -n '1s/[:,].*//p') || true
  [ -n "$owner" ] || fail "$soname (linked by lavapipe) is not installed on this machine"
  need=$(printf '%s\n' "$depends" | awk -v p="$owner" '$1 == p && $2 ~ /^\(/ {gsub(/[()]/, ""); print $2, $3}')
  [ -n "$need" ] || continue
  have=$(dpkg-query -W -f='${Version}' "$owner:$arch")
  # shellcheck disable=SC2086  # $need is "OP VERSION", two arguments
  dpkg --compare-versions "$have" $need || extra+=("$owner $need")
done

versions="mesa-vulkan-drivers=$mesa"
for e in "${extra[@]}"; do
  p=${e%% *}
  (cd "$dir/debs" && apt-get download -q "$p") >>"$log" 2>&1 || fail "download of $p failed"
  f=$(ls "$dir"/debs/"$p"_*.deb)
  v=$(dpkg-deb -f "$f" Version)
  # shellcheck disable=SC2086
  dpkg --compare-versions "$v" ${e#* } || fail "bookworm-backports has $p $v, Mesa needs ${e#* }"
  dpkg -x "$f" "$root"
  versions+=$'\n'"$p=$v"
done

# Every symbol lavapipe needs must resolve, with the fetched libraries first in the search path.
LD_LIBRARY_PATH="$libdir" ldd -r "$lvp" >"$dir/ldd.txt" 2>&1 || fail "ldd failed on $lvp"
if grep -E 'not found|undefined symbol' "$dir/ldd.txt" >>"$log"; then
  fail "lavapipe does not link against this machine's libraries plus ${extra[*]%% *}"
fi

# The loader reads only this ICD file (not /usr/share/vulkan/icd.d), so the system's Mesa 22 lavapipe
# is not enumerated next to it; VK_ICD_FILENAMES too for loaders older than VK_DRIVER_FILES.
api=$(sed -n 's/.*"api_version": *"\([^"]*\)".*/\1/p' "$root/usr/share/vulkan/icd.d/lvp_icd.json")
cat >"$dir/lvp_icd.json" <<EOF
{
    "file_format_version": "1.0.0",
    "ICD": {
        "library_path": "$lvp",
        "api_version": "$api"
    }
}
EOF
cat >"$dir/env.sh" <<EOF
# Source this to run Vulkan programs on Mesa $mesa lavapipe (written by tools/fetch-mesa25.sh).
export VK_DRIVER_FILES="$dir/lvp_icd.json"
export VK_ICD_FILENAMES="$dir/lvp_icd.json"
export LD_LIBRARY_PATH="$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
EOF
printf '%s\n' "$versions" >"$stamp"
echo "fetch-mesa25: $(tr '\n' ' ' <"$stamp")fetched into $dir (. $dir/env.sh)"
