#!/usr/bin/env bash
# The whole test suite on a fresh machine: install what is missing, build, run every test.
# GPU-labelled tests run on lavapipe with the Khronos validation layer and fail on any message.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
start=$SECONDS
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
echo "run-tests: all passed in $((SECONDS - start)) s"
