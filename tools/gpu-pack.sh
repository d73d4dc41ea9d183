#!/usr/bin/env bash
# Packs a GPU day for a machine that has a GPU but no compiler, packages or network (a lent
# accelerator, docs/PERFORMANCE.md "On a GPU"): a build with the cooperative-matrix kernels made
# here, the test programs the quick run takes, the CLI's shared libraries, trixie's validation
# layer, bookworm's Vulkan loader packages, llama.cpp's flash attention for comparison
# (tools/gpu_bench_ggml.c built against trixie-backports' ggml, its packages unpacked there), and
# run.sh, which runs tools/gpu-bench.sh there.
#   tools/gpu-pack.sh [DIR]      (default build-gpu-pack/, inside the repository: git ignores it)
# Copy the repository's tracked files and DIR to the GPU machine, DIR at the same place in it, and
# there, from anywhere:
#   DIR/run.sh [OUT_DIR]         (the environment as tools/gpu-bench.sh's: GPU_BENCH_QUICK=1, ...)
# GPU_PACK_BUILD names the build folder (default build-gpu), GPU_PACK_MESA26 tools/fetch-mesa26.sh's
# folder (default build/mesa26: its glslang builds the coopmat kernels, its layer validates them),
# GPU_PACK_TESTS the test programs (default: the quick run's, which run.sh runs unless
# GPU_BENCH_QUICK=0). The pack and the repository's tracked files travel to a lent machine
# together, 64 MiB at most: the size is checked at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
pack=${1:-build-gpu-pack}
build=${GPU_PACK_BUILD:-build-gpu}
mesa26=${GPU_PACK_MESA26:-build/mesa26}
tests=${GPU_PACK_TESTS:-matmul_cm attn_cm kv_cache matmul_scalar gpu_vs_cpu}
pack=${pack#./}
pack=${pack%/}
case "$pack" in /* | *..* | '' | .) echo "gpu-pack: DIR must be a folder inside the repository" >&2; exit 2 ;; esac
# (it is removed and made again: never a folder of the repository's own files)
if [ -n "$(git ls-files -- "$pack" | head -1)" ]; then echo "gpu-pack: $pack holds tracked files" >&2; exit 2; fi
for f in glslangValidator spirv-val layers/VkLayer_khronos_validation.json; do
  [ -e "$mesa26/$f" ] || { echo "gpu-pack: no $mesa26/$f (run tools/fetch-mesa26.sh $mesa26)" >&2; exit 2; }
done
mesa26=$(cd "$mesa26" && pwd)

# VKATTN_TEST_DEVICE empty: the tests run on the default device there (a discrete GPU first)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DVKATTN_TEST_DEVICE= -DVKATTN_TEST_LAUNCHER= \
  -DVKATTN_GLSLANG_COOPMAT="$mesa26/glslangValidator" -DVKATTN_SPIRV_VAL="$mesa26/spirv-val" >/dev/null
targets=(vkattn_cli)
for t in $tests; do targets+=("vkattn_test_$t"); done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >/dev/null

rm -rf "$pack"
mkdir -p "$pack/build/tests" "$pack/lib" "$pack/layers" "$pack/debs"
programs=("$pack/build/vkattn")
cp "$build/vkattn" "$pack/build/"
for t in $tests; do
  cp "$build/tests/vkattn_test_$t" "$pack/build/tests/"
  programs+=("$pack/build/tests/vkattn_test_$t")
done
strip "${programs[@]}"
# ctest's files (their paths name this machine's folders: run.sh links those to the copies)
(cd "$build" && find . -name CTestTestfile.cmake) | while read -r f; do
  mkdir -p "$pack/build/$(dirname "$f")"
  cp "$build/$f" "$pack/build/$f"
done
# the shared libraries the programs load beyond the C runtime (cairo's, cJSON), found here
ldd "${programs[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
  xargs -r cp -L -t "$pack/lib"
# trixie's validation layer (bookworm's rejects cooperative-matrix modules), its manifest beside it;
# gzipped (28 MB, 8 packed): run.sh unpacks it into its work folder
manifest=$mesa26/layers/VkLayer_khronos_validation.json
gzip -9c "$(sed -n 's/.*"library_path": "\(.*\)".*/\1/p' "$manifest")" >"$pack/layers/libVkLayer_khronos_validation.so.gz"
sed 's#"library_path": "[^"]*"#"library_path": "./libVkLayer_khronos_validation.so"#' "$manifest" \
  >"$pack/layers/VkLayer_khronos_validation.json"
# llama.cpp's attention kernel: ggml (trixie-backports, through tools/fetch-mesa26.sh's apt
# configuration) and the peer benchmark built against it here; the packages travel (6 MB, 55
# unpacked) and run.sh unpacks them beside the program, which finds them by its rpath
mkdir -p "$pack/ggml" "$build/ggml"
APT_CONFIG=$mesa26/apt/apt.conf apt-get update -q >/dev/null 2>&1 || true # the lists may be older than the pool
(cd "$pack/ggml" && APT_CONFIG=$mesa26/apt/apt.conf apt-get download -q libggml0/trixie-backports \
  libggml0-backend-vulkan/trixie-backports libggml-dev/trixie-backports >/dev/null 2>&1) ||
  { echo "gpu-pack: could not download ggml (trixie-backports)" >&2; exit 1; }
rm -rf "$build/ggml/root"
for f in "$pack/ggml/"*.deb; do dpkg -x "$f" "$build/ggml/root"; done
ggml=$build/ggml/root/usr
# trixie's libggml needs glibc 2.38: linked here without its symbols checked, run there
# shellcheck disable=SC2016 # $ORIGIN is the dynamic loader's, not the shell's
cc -O2 -std=c11 -Wall -Wextra tools/gpu_bench_ggml.c -I"$ggml/include" -L"$ggml/lib/x86_64-linux-gnu" \
  -lggml -lggml-base -lm -Wl,--allow-shlib-undefined -Wl,-rpath,'$ORIGIN/root/usr/lib/x86_64-linux-gnu' \
  -o "$pack/ggml/gpu_bench_ggml"
# trixie's C and C++ runtime from Mesa 26's tree, for a machine whose glibc is older than 2.38
mkdir -p "$pack/ggml/glibc"
# (with the libraries glibc 2.34 folded into libc, which older hosts' drivers still load)
for f in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libstdc++.so.6 libgcc_s.so.1; do
  cp -L "$mesa26/root/usr/lib/x86_64-linux-gnu/$f" "$pack/ggml/glibc/"
done
# the Vulkan loader and the GL dispatch libraries NVIDIA's ICD loads, for a machine without them
(cd "$pack/debs" && apt-get download -q libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 \
  >/dev/null 2>&1) || { echo "gpu-pack: apt-get download failed (apt-get update first?)" >&2; exit 1; }

cat >"$pack/run.sh" <<EOF
#!/usr/bin/env bash
# Written by tools/gpu-pack.sh at $(git rev-parse --short HEAD 2>/dev/null || echo '?'): runs tools/gpu-bench.sh with the
# packed build on this machine. The build's files name the folders it was made in: those become
# links to this copy (the repository's root and the build folder inside it).
set -euo pipefail
here=\$(cd "\$(dirname "\$0")" && pwd)
repo=\$(cd "\$here/$(dirname "$pack/x" | sed 's#[^/][^/]*#..#g')" && pwd)
made_src=$src made_build=$src/$build
if [ "\$repo" != "\$made_src" ]; then
  if [ -e "\$made_src" ] && [ ! -L "\$made_src" ]; then echo "run.sh: \$made_src is a folder here, not this copy" >&2; exit 1; fi
  mkdir -p "\$(dirname "\$made_src")"
  ln -sfn "\$repo" "\$made_src"
fi
if [ -e "\$made_build" ] && [ ! -L "\$made_build" ]; then echo "run.sh: \$made_build is a build here: run the packed one elsewhere" >&2; exit 1; fi
ln -sfn "\$here/build" "\$made_build"
# (grep without -q reads to the end: ldconfig is not cut off by SIGPIPE under pipefail)
if ! ldconfig -p | grep 'libvulkan\.so\.1' >/dev/null; then
  if [ "\$(id -u)" != 0 ]; then echo "run.sh: no Vulkan loader here (as root, run.sh unpacks \$here/debs into /)" >&2; exit 1; fi
  for f in "\$here"/debs/*.deb; do dpkg -x "\$f" /; done
  ldconfig
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "\${VK_DRIVER_FILES:-}" ] && [ -f "\$icd" ]; then export VK_DRIVER_FILES=\$icd; fi
# what is unpacked goes to a work folder outside the pack, which stays as small as it came
work=\$(mktemp -d "\${TMPDIR:-/tmp}/vkattn-gpu-pack.XXXXXX")
mkdir -p "\$work/layers" "\$work/ggml"
cp "\$here/layers/VkLayer_khronos_validation.json" "\$work/layers/"
gzip -dc "\$here/layers/libVkLayer_khronos_validation.so.gz" >"\$work/layers/libVkLayer_khronos_validation.so"
export VK_LAYER_PATH=\$work/layers VK_ADD_LAYER_PATH=\$work/layers
# llama.cpp's attention (ggml, glibc 2.38 or later): its packages beside the program (its rpath)
for f in "\$here"/ggml/*.deb; do dpkg -x "\$f" "\$work/ggml/root"; done
cp "\$here/ggml/gpu_bench_ggml" "\$work/ggml/"
export GPU_BENCH_GGML=\$work/ggml/gpu_bench_ggml
glibc=\$(getconf GNU_LIBC_VERSION | sed 's/.* //')
if [ "\$(printf '%s\\n' "\$glibc" 2.38 | sort -V | head -1)" != 2.38 ]; then # older: trixie's runtime runs it
  # (--library-path replaces LD_LIBRARY_PATH: the one run.sh exports goes after the system's folders)
  printf '#!/bin/sh\\nexec "%s/ggml/glibc/ld-linux-x86-64.so.2" --library-path "%s/ggml/glibc:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" "%s/ggml/gpu_bench_ggml" "\$@"\\n' \
    "\$here" "\$here" "\$work" >"\$work/ggml/run_ggml"
  chmod +x "\$work/ggml/run_ggml"
  GPU_BENCH_GGML=\$work/ggml/run_ggml
fi
export GPU_BENCH_GGML_BACKEND=\$work/ggml/root/usr/lib/x86_64-linux-gnu/ggml/backends0/libggml-vulkan.so
export LD_LIBRARY_PATH=\$here/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
# torch (tools/gpu_bench_torch.py) with the machine's own libraries
python3() { env -u LD_LIBRARY_PATH python3 "\$@"; }
export -f python3
cd "\$repo"
# the pack holds the quick run's tests (GPU_PACK_TESTS): the quick run unless asked otherwise
export GPU_BENCH_QUICK=\${GPU_BENCH_QUICK:-1}
rc=0
GPU_BENCH_BUILD=\$made_build tools/gpu-bench.sh "\$@" || rc=\$?
rm -rf "\$work"
exit "\$rc"
EOF
chmod +x "$pack/run.sh"
# the device tool carries the working tree and the pack, 64 MiB in all
pack_bytes=$(du -sb "$pack" | cut -f1)
tree_bytes=$(git ls-files -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
printf 'gpu-pack: %s is %d MiB, the tracked files %d MiB\n' "$pack" $((pack_bytes >> 20)) $((tree_bytes >> 20))
if [ $((pack_bytes + tree_bytes)) -gt $((60 << 20)) ]; then
  echo "gpu-pack: together over 60 MiB, close to the 64 MiB a lent machine takes" >&2
  exit 1
fi
