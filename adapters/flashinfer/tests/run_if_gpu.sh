#!/usr/bin/env bash
# run_if_gpu.sh <plugin.so or ""> [--expect-exit N TEXT [--and TEXT]...] <command...>: runs the command when the
# FlashInfer plugin was built and a CUDA device is present; else says why in one line and exits 77, which ctest
# reports as Skipped (SKIP_RETURN_CODE), never as Passed. With --expect-exit N TEXT the command must exit N and print
# TEXT, and every --and TEXT too (then this exits 0; else 1).
plugin="$1"; shift
if [ -z "$plugin" ] || [ ! -f "$plugin" ]; then
  echo "SKIPPED: the FlashInfer plugin is not built (configure with -DSAMPLECHECK_FLASHINFER_DIR=<a FlashInfer source tree> and CUDA on)"
  exit 77
fi
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "SKIPPED: no CUDA device (nvidia-smi -L lists none)"
  exit 77
fi
if [ "$1" = "--expect-exit" ]; then
  want="$2"; texts=("$3"); shift 3
  while [ "${1:-}" = "--and" ]; do texts+=("$2"); shift 2; done
  output="$("$@" 2>&1)"
  got=$?
  printf '%s\n' "$output"
  if [ "$got" -ne "$want" ]; then
    echo "FAILED: exit $got, expected $want"
    exit 1
  fi
  for text in "${texts[@]}"; do
    if ! grep -qF -- "$text" <<<"$output"; then
      echo "FAILED: the output does not say: $text"
      exit 1
    fi
  done
  exit 0
fi
exec "$@"
