#!/usr/bin/env bash
# The ctest fuzz_replay.report_gate_generated: the tampered-report corpus of tests/gate/tampered written again by
# make_corpus.py with this build's samplecheck (fresh runs, fresh edits), then
#   - its expected.txt must be the committed one (make_corpus.py and the committed corpus in step),
#   - the tampered_reports scenario of tests/tools/integrity_test.sh on it: every entry gated (or merged) with the exit
#     code and message expected.txt gives, so a change of samplecheck that lets an edit through is seen on reports
#     it wrote itself, not only on the committed ones,
#   - report_gate_fuzzer replays every file of it without a failing invariant.
#   report_gate_generated.sh <samplecheck> <scratch dir> <report_gate_fuzzer> [<fuzzer flag>...]
set -uo pipefail
bin=$1; root=$2; out=$root/corpus; scratch=$root/scratch; shift 2
here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/../tests/gate/tampered
rm -rf "$root"; mkdir -p "$scratch"
python3 "$corpus/make_corpus.py" "$bin" "$out" || { echo "make_corpus.py failed" >&2; exit 1; }
cp "$corpus/suite.json" "$corpus/replay-suite.json" "$out/"  # the reports name their suites relative to the corpus
if ! diff "$corpus/expected.txt" "$out/expected.txt"; then
  echo "make_corpus.py now writes another expected.txt than the committed one: run make_corpus.py <samplecheck>" \
       "tests/gate/tampered fuzz/corpus/report_gate and commit the corpus" >&2
  exit 1
fi
SAMPLECHECK_TAMPERED_CORPUS=$out bash "$here/../tests/tools/integrity_test.sh" "$bin" tampered_reports "$scratch" \
  >"$scratch/tampered_reports.txt" 2>&1 || { cat "$scratch/tampered_reports.txt"; exit 1; }
echo "tampered_reports on the corpus written now: $(grep -c '^ok ' "$scratch/tampered_reports.txt") entries as expected"
"$@" "$out"
