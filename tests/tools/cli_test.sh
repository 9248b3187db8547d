#!/usr/bin/env bash
# End-to-end tests of the samplecheck CLI (run, gate, list, identify), one scenario per ctest test:
#   cli_test.sh <samplecheck> <scenario> <scratch dir>
# Statistical scenarios use fixed seeds (deterministic). Alpha and power are stated per scenario.
set -uo pipefail
bin=$1; scenario=$2; dir=$3/$scenario
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=../lib/expect.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/expect.sh"

case "$scenario" in
  run_smoke_exact)
    # exact judged by its own profile: campaign false-alarm rate <= alpha = 1e-4 (Holm), fixed seed 1.
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 1 --report "$dir/r.json" --html "$dir/r.html" --progress lines
    grep -q "VERDICT: PASS" "$dir/out.txt" || fail "no PASS verdict"
    # A sampler campaign's summary states its alpha and TV (a replay's alone says its checks are exact).
    grep -q ' error;  alpha 0.0001 (Holm), TV 0.01, ' "$dir/out.txt" || fail "summary: $(grep cases: "$dir/out.txt")"
    [ -s "$dir/r.json" ] && [ -s "$dir/r.html" ] || fail "reports missing"
    grep -q '"schema": "samplecheck-report/1"' "$dir/r.json" || fail "schema missing"
    grep -q '<svg' "$dir/r.html" || fail "no chart in the HTML"
    if grep -Eq '(src|href)="https?:' "$dir/r.html"; then fail "HTML references external assets"; fi
    expect_rc 0 "$bin" gate "$dir/r.json"
    grep -q "VERDICT: PASS" "$dir/out.txt" || fail "gate: no PASS verdict"
    ;;
  gate_fails_wrong_profile)
    # exact:hf judged against vllm: V4 (min-p before/after top-p) keeps token 2 under hf only, so every run has
    # thousands of support violations (power ~1: P(no draw of a 0.22-mass token in 1e5 draws) ~ 0).
    expect_rc 1 "$bin" run --suite smoke --sampler exact:hf --profile vllm --seed 1 --report "$dir/r.json" --progress none
    grep -q "FAIL    V4-minp-order" "$dir/out.txt" || fail "V4 not reported failing"
    expect_rc 1 "$bin" gate "$dir/r.json"
    grep -q "VERDICT: FAIL" "$dir/out.txt" || fail "gate: no FAIL verdict"
    ;;
  verify_gates_on_properties)
    # samplecheck verify = campaign + property suites (fixed seeds: campaign seed 1, RapidCheck seed 20260401, so
    # deterministic). exact passes both (campaign false-alarm rate <= 1e-4, Holm; a property cannot fail on a
    # correct sampler). minp-zero-clamp (min_p = 0 clamped to 1e-6) keeps the smoke campaign's verdict (its lost mass
    # is far below TV 0.01) but fails kept-set-complete: the verdict, the report and the gate say so.
    expect_rc 0 "$bin" verify --suite smoke --sampler exact --report "$dir/ok.json" --progress none
    grep -q "properties (seed 20260401): 23 passed, 0 failed" "$dir/out.txt" || fail "properties line"
    grep -q '"properties"' "$dir/ok.json" || fail "no properties in the report"
    expect_rc 0 "$bin" gate "$dir/ok.json"
    expect_rc 0 "$bin" verify --suite smoke --sampler mutant:minp-zero-clamp --no-properties --progress none
    expect_rc 1 "$bin" verify --suite smoke --sampler mutant:minp-zero-clamp --report "$dir/bad.json" --progress none
    grep -q "not a pass: property kept-set-complete FAILED" "$dir/out.txt" || fail "failed property not named"
    grep -q -- "--reproduce " "$dir/out.txt" || fail "no replay line"
    expect_rc 1 "$bin" gate "$dir/bad.json"
    grep -q "property kept-set-complete FAILED" "$dir/out.txt" || fail "gate: failed property not named"
    # With a baseline: the A/B test too.
    expect_rc 0 "$bin" verify --suite smoke --sampler exact --baseline "$dir/ok.json" --progress none
    grep -q "A/B VERDICT: SAME" "$dir/out.txt" || fail "A/B not SAME"
    ;;
  equivalence_verdict)
    # The opposite verdict (docs/statistics.md, "Equivalence bounds"): upper confidence bounds on each row case's
    # binned TV at its alpha (6.6e-7 here; coverage calibrated in tests/stats, so a false certificate of a sampler
    # farther than eps has probability <= 6.6e-7 per case). Fixed seed 1: deterministic.
    # exact on smoke (up to 2^20 draws per row case): every row case certifies TV 0.05 (a correct sampler's bound
    # there is ~0.005-0.02; with probability >= 0.99 per case at these draws by DrawsToCertifyTotalVariation).
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 1 --equivalence 0.05 --report "$dir/ok.json" \
      --html "$dir/ok.html" --progress none
    grep -Eq "; ([0-9]+) of \1 row cases certified within TV 0.05" "$dir/out.txt" || fail "not every row case certified"
    grep -q '"equivalence": {' "$dir/ok.json" || fail "no equivalence in the report"
    grep -q '"tv_upper"' "$dir/ok.json" || fail "no bounds in the report"
    grep -q 'Equivalence bounds' "$dir/ok.html" || fail "no bounds in the HTML"
    expect_rc 0 "$bin" gate "$dir/ok.json"
    grep -q "row cases certified within TV 0.05" "$dir/out.txt" || fail "gate: no equivalence line"
    # Without --equivalence the bounds are reported and judge nothing.
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 1 --max-draws 20000 --allow-underpowered --progress none
    grep -q "equivalence: largest binned TV upper bound" "$dir/out.txt" || fail "bounds not reported"
    # Too few draws (--max-draws 2000): inconclusive for lack of draws, each such case named with the draws needed.
    expect_rc 1 "$bin" run --suite smoke --sampler exact --seed 1 --equivalence 0.05 --max-draws 2000 --progress none
    grep -q "inconclusive for lack of draws" "$dir/out.txt" || fail "lack of draws not named"
    grep -q "a correct sampler needs about" "$dir/out.txt" || fail "draws needed not named"
    grep -Eq "not a pass: equivalence within TV 0.05 not shown: [0-9]+ case\(s\) inconclusive" "$dir/out.txt" \
      || fail "verdict problem missing"
    # A real distance: topp-truncated-cdf (V3-nucleus: TV 0.095 from vllm) is never certified within 0.05 although
    # its draws would certify a correct sampler; the gate of its report recomputes the same verdict.
    expect_rc 1 "$bin" run --suite smoke --sampler mutant:topp-truncated-cdf --seed 1 --equivalence 0.05 \
      --report "$dir/bad.json" --progress none
    grep -q "FAIL    V3-nucleus: inconclusive: binned TV upper bound .* the data point at a distance near or above eps" \
      "$dir/out.txt" || fail "V3 distance not named"
    expect_rc 1 "$bin" gate "$dir/bad.json"
    grep -q "equivalence within TV 0.05 not shown" "$dir/out.txt" || fail "gate: equivalence verdict not recomputed"
    # Bad values: exit 2 naming the value.
    expect_rc 2 "$bin" run --suite smoke --sampler exact --equivalence 1.5
    grep -q "equivalence" "$dir/err.txt" || fail "bad --equivalence not named"
    expect_rc 2 "$bin" run --suite smoke --sampler exact --equivalence-chi2 0.1
    grep -q "needs --equivalence" "$dir/err.txt" || fail "--equivalence-chi2 alone accepted"
    ;;
  ab_same)
    # Same rows (seed 1), independent draws (draw seed 2) of the same sampler: A/B false-alarm rate <= 1e-4 (Holm).
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 1 --report "$dir/base.json" --progress none
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 1 --draw-seed 2 --report "$dir/new.json" --progress none
    expect_rc 0 "$bin" gate "$dir/new.json" --baseline "$dir/base.json"
    grep -q "A/B VERDICT: SAME" "$dir/out.txt" || fail "A/B not SAME"
    ;;
  ab_differ)
    # Baseline exact:hf, candidate exact:vllm, both judged as hf: V4 differs by TV 0.22 (power ~1 at 1e5 draws).
    expect_rc 0 "$bin" run --suite smoke --sampler exact:hf --profile hf --seed 1 --report "$dir/base.json" --progress none
    expect_rc 1 "$bin" run --suite smoke --sampler exact:vllm --profile hf --seed 1 --draw-seed 2 --report "$dir/new.json" --progress none
    expect_rc 1 "$bin" gate "$dir/new.json" --baseline "$dir/base.json"
    grep -q "A/B VERDICT: DIFFER" "$dir/out.txt" || fail "A/B not DIFFER"
    grep -q "DIFFER V4-minp-order" "$dir/out.txt" || fail "V4 not flagged by A/B"
    ;;
  bad_inputs)
    expect_rc 2 "$bin" run --suite no-such-suite --sampler exact
    grep -q "unknown suite" "$dir/err.txt" || fail "message"
    expect_rc 2 "$bin" run --suite smoke --sampler no-such-sampler
    expect_rc 2 "$bin" run --suite smoke --sampler exact --profile no-such-profile
    expect_rc 2 "$bin" run --suite "$dir/missing.json" --sampler exact
    echo '{"schema": "samplecheck-suite/1", "cases": [' > "$dir/broken.json"
    expect_rc 2 "$bin" run --suite "$dir/broken.json" --sampler exact
    echo '{"schema": "samplecheck-suite/1", "cases": [{"name": "x", "row": {"kind": "gaussian"}, "params": {"top_p": 1.5}}]}' > "$dir/params.json"
    expect_rc 2 "$bin" run --suite "$dir/params.json" --sampler exact
    grep -q "top_p" "$dir/err.txt" || fail "invalid params message"
    echo '{"schema": "samplecheck-suite/1", "cases": [{"name": "x", "row": {"kind": "warped"}}]}' > "$dir/kind.json"
    expect_rc 2 "$bin" run --suite "$dir/kind.json" --sampler exact
    echo '{"schema": "samplecheck-suite/1", "cases": [{"name": "x", "row": {"kind": "npy", "path": "nope.npy"}}]}' > "$dir/npy.json"
    expect_rc 2 "$bin" run --suite "$dir/npy.json" --sampler exact
    grep -q "nope.npy" "$dir/err.txt" || fail "npy message"
    printf 'not a numpy file at all' > "$dir/garbage.npy"
    echo '{"schema": "samplecheck-suite/1", "cases": [{"name": "x", "row": {"kind": "npy", "path": "garbage.npy"}}]}' > "$dir/npy2.json"
    expect_rc 2 "$bin" run --suite "$dir/npy2.json" --sampler exact
    grep -q "not a valid .npy" "$dir/err.txt" || fail "npy parse message"
    echo '{"schema": "samplecheck-report/1"}' > "$dir/report.json"
    expect_rc 2 "$bin" gate "$dir/report.json"
    echo '{"schema": "samplecheck-report/99"}' > "$dir/report99.json"
    expect_rc 2 "$bin" gate "$dir/report99.json"
    expect_rc 2 "$bin" gate "$dir/missing-report.json"
    expect_rc 2 "$bin" run --sampler exact
    expect_rc 2 "$bin" identify --sampler no-such-sampler
    expect_rc 2 "$bin" properties --sampler exact --exclude-rows no-such-kind
    grep -q "no row kind 'no-such-kind'" "$dir/err.txt" || fail "--exclude-rows: the bad kind is not named"
    expect_rc 2 "$bin" properties --sampler exact --skip-property no-such-property
    ;;
  identify_exact_hf)
    # One draw set per probe judged by every profile at alpha 1e-6 per probe and profile.
    expect_rc 0 "$bin" identify --sampler exact:hf --seed 1 --progress
    grep -q "consistent with: hf$" "$dir/out.txt" || fail "hf not singled out"
    grep -Eq "^\[ *1/[0-9]+\] done +V1 p=0.5 +262144 draws +[0-9.]+ s$" "$dir/err.txt" || fail "--progress printed no probe line"
    grep -q "INTERRUPTED" "$dir/out.txt" && fail "a finished identify reads as interrupted"
    ;;
  list)
    expect_rc 0 "$bin" list
    for word in exact smoke standard nightly vllm hf; do grep -q "$word" "$dir/out.txt" || fail "list lacks $word"; done
    grep -q "^replay sources" "$dir/out.txt" || fail "list lacks the replay sources"
    # The three kinds tables print the same way (one function): usage, available|missing, summary.
    for table in --samplers --verifiers --replay-sources; do
      expect_rc 0 "$bin" list "$table"
      grep -Eq '^exact\[:profile\] +available ' "$dir/out.txt" || fail "list $table lacks exact, available"
      grep -Eq '^process:<command> +available ' "$dir/out.txt" || fail "list $table lacks process:<command>"
    done
    ;;
  help)
    # Every command's --help ends with its exit codes (0, 2, and 1 / 130 / 143 where the command has them), and the
    # program's own --help with every command's; run --help groups its options, everyday ones first, and names
    # values by what they are (no TEXT).
    expect_rc 0 "$bin" --help
    grep -q "^Exit codes: 0 pass" "$dir/out.txt" || fail "samplecheck --help has no exit codes"
    commands=$(sed -n '/^Subcommands:/,/^$/p' "$dir/out.txt" | awk 'NR > 1 && NF {print $1}')
    [ "$(wc -w <<<"$commands")" -ge 11 ] || fail "samplecheck --help lists too few commands: $commands"
    for c in $commands; do
      expect_rc 0 "$bin" "$c" --help
      grep -q '^Exit codes (docs/cli.md' "$dir/out.txt" || fail "$c --help has no exit codes"
      grep -Eq '^  0    ' "$dir/out.txt" && grep -Eq '^  2    usage or input error' "$dir/out.txt" ||
        fail "$c --help lacks exit 0 or 2"
      if grep -Eq ' TEXT( |$|=)' "$dir/out.txt"; then fail "$c --help prints a TEXT value name"; fi
      case "$c" in
        run|verify|replay|identify)
          grep -Eq '^  1    ' "$dir/out.txt" && grep -Eq '^  130  stopped by SIGINT' "$dir/out.txt" &&
            grep -Eq '^  143  stopped by SIGTERM' "$dir/out.txt" || fail "$c --help lacks exit 1, 130 or 143" ;;
        gate|merge|mutants|properties) grep -Eq '^  1    ' "$dir/out.txt" || fail "$c --help lacks exit 1" ;;
      esac
    done
    expect_rc 0 "$bin" run --help
    groups=$(grep -E '^[A-Z][^:]*:$' "$dir/out.txt" | tr '\n' '|')
    [ "$groups" = "Options:|What to run, and where its report goes:|Power and draws:|What a pass needs:|Interrupted runs, recorded plans, limits:|Speculative decoding:|Scale out:|Exit codes (docs/cli.md, \"Exit codes\"):|" ] ||
      fail "run --help groups: $groups"
    sed -n '/^What to run/,/^Power/p' "$dir/out.txt" | grep -q -- '--suite SUITE REQUIRED' || fail "--suite not first group"
    sed -n '/^What to run/,/^Power/p' "$dir/out.txt" | grep -q -- '--sampler SPEC=exact' || fail "--sampler not first group"
    # The --tv default run --help names is the one a run applies: smoke at its suite's 0.01.
    grep -q "default: the suite's; smoke 0.01" "$dir/out.txt" || fail "run --help --tv default"
    expect_rc 0 "$bin" run --suite smoke --max-draws 1000 --allow-underpowered --case gauss-temp --progress none --report "$dir/tv.json"
    grep -q '"tv": 0.01' "$dir/tv.json" || fail "smoke did not run at TV 0.01"
    python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["sampler"]["spec"] != "exact")' "$dir/tv.json" || fail "the default sampler is not exact"
    ;;
  case_alone)
    # --case draws the named cases planned and seeded as in the whole suite (issue 43): the same case fields as the
    # full run's (exact, fixed seed 1, capped at 20000 draws so both runs are short; only the time and the
    # Holm-adjusted p-value, Holm being over the selected cases, may differ). Deterministic.
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 1 --max-draws 20000 --allow-underpowered \
      --report "$dir/full.json" --progress none
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 1 --max-draws 20000 --allow-underpowered \
      --case topk --case batch/b4,V5-joint --report "$dir/some.json" --progress none
    grep -q "cases: 3 pass" "$dir/out.txt" && fail "a batch row selected only its row"
    python3 - "$dir/full.json" "$dir/some.json" <<'PY' || fail "the selected cases differ from the full run's"
import json, sys
full, some = (json.load(open(p)) for p in sys.argv[1:])
by_name = {c["name"]: c for c in full["cases"]}
names = [c["name"] for c in some["cases"]]
batch_rows = sorted(n for n in by_name if n.startswith("batch/"))
assert sorted(names) == sorted(["topk", "V5-joint"] + batch_rows) and len(batch_rows) == 12, names
assert some["selected_cases"] == ["topk", "batch/b4", "V5-joint"], some.get("selected_cases")
for c in some["cases"]:
    a, b = dict(by_name[c["name"]]), dict(c)
    for d in (a, b):
        d.pop("seconds"); d.pop("holm_adjusted_p")
    assert a == b, (c["name"], [k for k in a if a.get(k) != b.get(k)])
PY
    expect_rc 0 "$bin" gate "$dir/some.json"
    # An unknown name: exit 2 naming it and the nearest names, before anything is drawn.
    expect_rc 2 "$bin" run --suite smoke --sampler exact --case V5-jiont --progress none
    grep -q "case V5-jiont: suite smoke has no case of that name (nearest: V5-joint" "$dir/err.txt" || fail "unknown --case not named"
    expect_rc 2 "$bin" verify --suite smoke --sampler exact --case nope --no-properties --progress none
    grep -q "case nope: suite smoke has no case of that name" "$dir/err.txt" || fail "verify: unknown --case not named"
    expect_rc 2 "$bin" run --suite spec-smoke --verifier exact --case nope --progress none
    grep -q "case nope: suite spec-smoke has no case of that name" "$dir/err.txt" || fail "run --verifier: unknown --case"
    # A support violation says why and where: topp-joint (top-p on the full distribution instead of the top-k
    # renormalized one) keeps token 3 of V5 (mass ahead 0.80 < 0.82), which vllm's top-p drops (0.80 / 0.85 = 0.941
    # >= 0.82); at the 0.05 probability of token 3 and ~1e5 draws it is drawn thousands of times (power ~1).
    expect_rc 1 "$bin" run --suite smoke --sampler mutant:topp-joint --seed 1 --case V5-joint --report "$dir/bad.json" --progress none
    for want in "FAIL    V5-joint: " "support violation(s); row dyadic(V5); T 1, top_k 4, top_p 0.82, min_p 0; outside the kept set of 3: token 3 " \
        "(p 0.05; top-p drops it: the mass ahead of it is 0.941 >= top_p 0.82)" \
        "reproduce: samplecheck run --suite smoke --sampler mutant:topp-joint --profile vllm --seed 1 --case V5-joint"; do
      grep -qF -- "$want" "$dir/out.txt" || fail "the finding lacks: $want"
    done
    python3 - "$dir/bad.json" <<'PY' || fail "the report lacks the support detail or the reproduce line"
import json, sys
c = json.load(open(sys.argv[1]))["cases"][0]
t = c["support"]["tokens"][0]
assert c["support"]["kept"] == 3 and t["token"] == 3 and t["dropped_by"] == "top-p", c["support"]
assert abs(t["reference_prob"] - 0.05) < 1e-6 and t["rank"] == 4, t
assert c["reproduce"].endswith(" --case V5-joint"), c.get("reproduce")
PY
    # The reproduce line draws the same case: the same finding.
    expect_rc 1 "$bin" run --suite smoke --sampler mutant:topp-joint --profile vllm --seed 1 --case V5-joint --progress none
    grep -qF "(p 0.05; top-p drops it: the mass ahead of it is 0.941 >= top_p 0.82)" "$dir/out.txt" || fail "reproduce"
    # explain --suite --case: the case's row, parameters and what the profiles keep; --suite alone lists the names.
    expect_rc 0 "$bin" explain --suite smoke --case V5-joint
    for want in "case V5-joint of suite smoke (seed 1): row dyadic(V5); T 1, top_k 4, top_p 0.82, min_p 0" \
        "kept 3 of 17 tokens" "flashinfer-joint"; do
      grep -qF -- "$want" "$dir/out.txt" || fail "explain --suite --case lacks: $want"
    done
    expect_rc 0 "$bin" explain --suite smoke
    grep -q "^  batch/b4$" "$dir/out.txt" || fail "explain --suite lists no batch row"
    expect_rc 2 "$bin" explain --suite smoke --case V5-jiont
    grep -q "nearest: V5-joint" "$dir/err.txt" || fail "explain: unknown --case"
    ;;
  *) fail "unknown scenario" ;;
esac
echo "PASS ($scenario)"
