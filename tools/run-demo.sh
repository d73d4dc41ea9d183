#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, run the demo forward on the
# default Vulkan device (lavapipe when there is no GPU). Extra arguments go to `vkattn demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target vkattn_cli >/dev/null
exec ./build/vkattn demo "$@"
