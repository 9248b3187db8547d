#!/usr/bin/env bash
# The consumer test of the installed package (tests/package/CMakeLists.txt).
#   run_consumer.sh installed <build-dir> <scratch> <cmake> [<cuda-root>]   install that build, consume it
#   run_consumer.sh cpu <source-dir> <scratch> <cmake>                      build the libraries without CUDA, install,
#                                                                           consume
# Exits 0 when the consumer configures, builds, runs a campaign and finds its verdict; prints each step.
set -euo pipefail
mode=$1 dir=$2 scratch=$3 cmake=$4 cuda_root=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch"
mkdir -p "$scratch"
prefix="$scratch/prefix"
if [[ $mode == cpu ]]; then
  echo "== a CUDA-less build of the libraries ($dir)"
  "$cmake" -S "$dir" -B "$scratch/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSAMPLECHECK_CUDA=OFF \
    -DSAMPLECHECK_BUILD_TESTS=OFF -DSAMPLECHECK_BUILD_BENCH=OFF >"$scratch/configure.log"
  "$cmake" --build "$scratch/build" -j2 >"$scratch/build.log"
  dir="$scratch/build"
fi
echo "== cmake --install $dir --prefix $prefix"
"$cmake" --install "$dir" --prefix "$prefix" >"$scratch/install.log"
has_cuda=$(grep -o 'set(samplecheck_HAS_CUDA [A-Z]*)' "$prefix"/lib*/cmake/samplecheck/samplecheckConfig.cmake)
echo "   installed; package config: $has_cuda"
args=(-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release)
[[ -n $cuda_root ]] && args+=(-DCUDAToolkit_ROOT="$cuda_root")
echo "== a fresh consumer: find_package(samplecheck), target_link_libraries(... samplecheck::harness)"
"$cmake" -S "$here/consumer" -B "$scratch/consumer" -G Ninja "${args[@]}"
"$cmake" --build "$scratch/consumer"
echo "== the consumer runs a campaign through the public headers"
(cd "$scratch" && "$scratch/consumer/samplecheck_consumer" "$scratch/consumer-report.json")
