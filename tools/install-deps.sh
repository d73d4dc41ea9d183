#!/usr/bin/env bash
# Installs the Debian (bookworm) packages vkattn needs to build, run and test, if any is missing.
# Needs root (or sudo); does nothing when everything is installed already.
set -euo pipefail

packages=(
  gcc make cmake libc6-dev            # the build
  libvulkan-dev libvulkan-volk-dev    # Vulkan headers + loader, volk
  glslang-tools spirv-tools           # GLSL -> SPIR-V at build time
  mesa-vulkan-drivers                 # lavapipe: Vulkan on the CPU, for machines without a GPU
  vulkan-validationlayers vulkan-tools  # the tests run under VK_LAYER_KHRONOS_validation
  libcjson-dev                        # the CLI reads and writes its JSON files with cJSON
  libcairo2-dev fonts-dejavu-core     # the CLI draws its PNG/SVG pictures with cairo, text in DejaVu Sans
  clang libclang-rt-14-dev            # libFuzzer targets and sanitizer runs
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
