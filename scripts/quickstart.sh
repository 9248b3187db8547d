#!/usr/bin/env bash
# The main job: install what is missing, build (default preset), then gate the best sampler available (the CUDA
# kernels when a GPU is present, else the exact CPU sampler) with `samplecheck verify`: the smoke campaign, then
# the standard campaign with the property suites; print the gate summaries and the report paths. Exit 0 when
# every case and property passes, 1 when any fails, 2 on a usage or input error.
#
#   bash scripts/quickstart.sh                       best sampler, profile vllm
#   bash scripts/quickstart.sh --sampler plugin:./libmy_sampler.so --profile hf
set -euo pipefail
cd "$(dirname "$0")/.."
sampler=""; profile=vllm; out=reports
while [ $# -gt 0 ]; do
  case "$1" in
    --sampler) sampler=$2; shift ;;
    --profile) profile=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "quickstart: unknown option '$1' (allowed: --sampler SPEC, --profile NAME, --out DIR)" >&2; exit 2 ;;
  esac
  shift
done
bash scripts/setup
cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)"
bin=build/default/tools/samplecheck
if [ -z "$sampler" ]; then
  sampler=exact
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && "$bin" list --samplers 2>/dev/null | grep -Eq '^cuda[^ ]* +available'; then
    sampler=cuda
  fi
fi
mkdir -p "$out"
echo "== samplecheck: sampler $sampler, profile $profile"
rc=0
# The gate of a change (samplecheck verify): smoke's campaign, then standard's campaign with the property suites.
"$bin" verify --suite smoke --sampler "$sampler" --profile "$profile" --seed 1 --no-properties \
  --report "$out/smoke.json" --html "$out/smoke.html" || rc=$?
[ $rc -le 1 ] || exit $rc
"$bin" verify --suite standard --sampler "$sampler" --profile "$profile" --seed 1 \
  --report "$out/standard.json" --html "$out/standard.html" || rc=$?
[ $rc -le 1 ] || exit $rc
echo "== reports: $out/smoke.json $out/smoke.html $out/standard.json $out/standard.html"
exit $rc
