# engines-gpu-sources.sh: sourced by scripts/engines-gpu-run for --phase sources and --phase sources-standard (issue
# 29): the engines' own sampler files (vLLM v0.26 v1 Triton/dispatch/PyTorch paths, Model Runner V2, TokenSpeed's
# Triton backends, SGLang seeded and unseeded, TensorRT-LLM vanilla.py, and the rejection samplers as verifiers)
# served by adapters/<engine>/serve.py from the trees in .engines-src/ (carried: git-ignored).
#
# --phase sources: every job below (or those --only names) at once, in the background, job i on GPU i mod N (several a
# GPU: the clients are Python-bound, the GPU mostly idle); each job a series of steps, each cut at min(its share of
# the budget, the deadline): identify 25 %, smoke 45 %, the last step the rest. A smoke or spec run cut at the
# deadline keeps its journal: the next call with ENGINES_STATE=<the previous results/> resumes it (--resume). Every
# job writes its own summary; they are joined into engines-gpu.txt at the end. On one GPU (16 cores) all jobs of one
# call share the cores: split them over two calls (results/conformance/README.md, "GPU runs of the engines' own
# code" has the two --only lists). The reduced cases (many-tail, topp: one case each, no cap, full power) run uncapped.
# --phase sources-standard: the standard suite at its own plan (TV 1e-3, power 0.99; STANDARD_TV to change) of the
# jobs named by --only (default vllm-dispatch), each unsharded on its own GPU, journaled and resumed across calls;
# spec-standard of the v1 and MRV2 verifiers likewise (--only v1-verifier,mrv2-verifier; without min-p, which their
# front end refuses: adapters/suites/spec-standard-no-min-p.suite.json, and standard-no-min-p for sglang-seeded and
# trtllm). STANDARD_TV=auto with STANDARD_BUDGET=S lets the budget choose the TV: the least TV whose full-power plan
# fits S seconds at the rate the probe measures on this engine (issue 41: "at the TV that 10 minutes affords").
#
# Environment: ENGINES_SRC (default .engines-src), PYTHON (default python3), SAMPLECHECK_<ENGINE>_SRC (default the
# tree of that engine under ENGINES_SRC), SMOKE_MAX_DRAWS (a --max-draws cap for the smoke and spec-smoke steps, with
# --allow-underpowered: a capped run below the suite's power is judged on the draws it has, and its summary says so;
# default none), PROPERTY_CASES (--max-success of the property steps; default 20), ENGINES_DEVICE (default cuda; cpu
# tries the plumbing of the pure-torch jobs without a GPU). Uses $sc, $work, $log, $budget, left(), wanted() of
# engines-gpu-run.
src_root="${ENGINES_SRC:-.engines-src}"
py="${PYTHON:-python3}"
adapters="$(realpath adapters)"
tree_of() { ls -d "$src_root/$1"-* 2>/dev/null | head -1; }
export SAMPLECHECK_VLLM_SRC="${SAMPLECHECK_VLLM_SRC:-$(realpath "$(tree_of vllm)" 2>/dev/null)}"
export SAMPLECHECK_SGLANG_SRC="${SAMPLECHECK_SGLANG_SRC:-$(realpath "$(tree_of sglang)" 2>/dev/null)}"
export SAMPLECHECK_TRTLLM_SRC="${SAMPLECHECK_TRTLLM_SRC:-$(realpath "$(tree_of trtllm)" 2>/dev/null)}"
export SAMPLECHECK_TOKENSPEED_SRC="${SAMPLECHECK_TOKENSPEED_SRC:-$(realpath "$(tree_of tokenspeed)" 2>/dev/null)}"
export SAMPLECHECK_PRIME_RL_SRC="${SAMPLECHECK_PRIME_RL_SRC:-$(realpath "$(tree_of prime_rl)" 2>/dev/null)}"
export PYTHONDONTWRITEBYTECODE=1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$gpus" -ge 1 ] || gpus=1
suites="$(realpath adapters/suites)"

{
  echo "== sources: $gpus GPU(s); trees:"
  for v in VLLM SGLANG TRTLLM TOKENSPEED PRIME_RL; do
    var="SAMPLECHECK_${v}_SRC"
    echo "   $var=${!var} ($(cat "${!var}/.samplecheck-source" 2>/dev/null))"
  done
  "$py" -c "import torch, triton; print('   torch', torch.__version__, 'triton', triton.__version__, 'cuda', \
torch.cuda.is_available(), torch.cuda.device_count())" 2>&1
} >> "$log"

dev="${ENGINES_DEVICE:-cuda}"   # cpu: to try the plumbing of the pure-torch jobs on a machine without a GPU
V="$py $adapters/vllm/serve.py --src $SAMPLECHECK_VLLM_SRC --device $dev"
TS="$py $adapters/tokenspeed/serve.py --src $SAMPLECHECK_TOKENSPEED_SRC --device $dev"
SG="$py $adapters/sglang/serve.py --src $SAMPLECHECK_SGLANG_SRC --device $dev"
TR="$py $adapters/trtllm/serve.py --src $SAMPLECHECK_TRTLLM_SRC --device $dev"

# jstep <job> <step> <share: seconds or rest> <samplecheck args...>: one samplecheck command of a job, cut at its
# share of the deadline (SIGINT: a run writes its report marked interrupted and keeps its journal); a run whose
# journal an earlier call left is resumed. Summary lines go to the job's own log.
jstep() {
  local job="$1" name="$2" share="$3"; shift 3
  local jlog="$work/$job.summary" remaining; remaining=$(left)
  if [ "$remaining" -le 20 ]; then echo "== $job/$name: not started ($remaining s left)" >> "$jlog"; return; fi
  local limit=$remaining
  if [ "$share" != rest ] && [ "$share" -lt "$limit" ]; then limit=$share; fi
  local base="$work/$job.$name" extra=()
  if [ -f "$base.json" ] && grep -q '"interrupted": *false' "$base.json" 2>/dev/null; then
    echo "== $job/$name: finished in an earlier call" >> "$jlog"; return
  fi
  case "$1" in run) extra=(--report "$base.json" --progress none)
                    [ -f "$base.json.journal" ] && extra+=(--resume) ;;
               identify) extra=(--json "$base.json" --progress) ;; esac  # a cut identify prints its finished probes
  echo "== $job/$name ($(date -u +%T), GPU $CUDA_VISIBLE_DEVICES, limit $limit s): samplecheck $* ${extra[*]}" \
    >> "$jlog"
  local t0=$SECONDS
  timeout --signal=INT --kill-after=15 "$limit" "$sc" "$@" "${extra[@]}" > "$base.txt" 2>&1
  local rc=$?
  echo "exit $rc after $((SECONDS - t0)) s$([ $rc -eq 124 ] && echo ' (cut at its deadline)')" >> "$jlog"
  grep -E "^suite |^sampler |cases:|VERDICT|FAIL  |ERROR|consistent with|excluded by|passed,|FAILED|lowest achieved|not a pass" \
    "$base.txt" | head -60 >> "$jlog"
  case " $* " in *" --allow-underpowered "*)
    echo "   capped (--max-draws ${SMOKE_MAX_DRAWS:-?} --allow-underpowered): cases below the suite's power are judged on" \
         "the draws they have; the power reached is in the report" >> "$jlog" ;; esac
  grep -E "smallest p|draws in|resuming" "$base.txt" | head -5 >> "$jlog"
  if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then tail -8 "$base.txt" >> "$jlog"; fi
}

smoke_cap=(${SMOKE_MAX_DRAWS:+--max-draws "$SMOKE_MAX_DRAWS" --allow-underpowered})
props=(--seed 20260401 --max-success "${PROPERTY_CASES:-20}" --tolerance 1e-3)

# The jobs: one function each (name = what --only selects). Profiles: vllm-api for vLLM with its SamplingParams front
# end, vllm-triton for the Triton top-k/top-p path without it (the sampler files alone), sglang-torch, trtllm-torch;
# TokenSpeed under tokenspeed (its profile since the fifth run, after identify spoke: docs/conformance.md).
job_pytest() {
  local jlog="$work/pytest.summary" t0=$SECONDS
  echo "== pytest ($(date -u +%T), GPU $CUDA_VISIBLE_DEVICES): the adapters' tests with triton and CUDA" >> "$jlog"
  timeout --kill-after=10 "$(( $(left) < 240 ? $(left) : 240 ))" "$py" -m pytest -q -rs -p no:cacheprovider \
    "$adapters/vllm" "$adapters/sglang" "$adapters/tokenspeed" "$adapters/trtllm" "$adapters/test_engine_serve.py" \
    "$adapters/test_engine_source.py" \
    > "$work/pytest.txt" 2>&1
  echo "exit $? after $((SECONDS - t0)) s" >> "$jlog"
  grep -E "passed|failed|error|SKIPPED|FAILED|Error" "$work/pytest.txt" | tail -30 >> "$jlog"
}
# share <percent>: that share of the call's budget, in seconds.
share() { echo $((budget * $1 / 100)); }
# engine_job <job> <sampler> <profile> <what>...: the job's steps, each of: identify, smoke (or smoke=<suite file>:
# the smoke step on that suite), props (the property suites), props-no-min-p (the same with min_p held at 0, for a
# path that refuses min-p: `properties --no-min-p`), spec (spec-smoke, or spec=<suite file>), each cut at its share
# (the last step takes the rest).
engine_job() {
  local job="$1" s="$2" profile="$3"; shift 3
  local n=$# i=0 what sh suite
  for what in "$@"; do
    i=$((i + 1))
    case "$what" in identify) sh=$(share 25) ;; *) sh=$(share 45) ;; esac
    [ $i -eq $n ] && sh=rest
    case "$what" in
      identify) jstep "$job" identify "$sh" identify --sampler "$s" ;;
      smoke) jstep "$job" "smoke.$profile" "$sh" run --suite smoke --profile "$profile" --sampler "$s" \
               "${smoke_cap[@]}" ${SMOKE_EXTRA:-} ;;
      smoke=*) suite="${what#smoke=}"
               jstep "$job" "$(basename "$suite" .suite.json).$profile" "$sh" run --suite "$suite" \
                 --profile "$profile" --sampler "$s" "${smoke_cap[@]}" ${SMOKE_EXTRA:-} ;;
      props) jstep "$job" properties "$sh" properties --profile "$profile" --sampler "$s" "${props[@]}" ;;
      props-no-min-p) jstep "$job" properties-no-min-p "$sh" properties --profile "$profile" --sampler "$s" \
                        "${props[@]}" --no-min-p ;;
      spec|spec=*)
        suite=spec-smoke
        [ "$what" != spec ] && suite="${what#spec=}"
        jstep "$job" "$(basename "$suite" .suite.json).$profile" "$sh" run --suite "$suite" --profile "$profile" \
          --verifier "$s" "${smoke_cap[@]}" ;;
    esac
  done
}
# The jobs. vLLM: identify speaks first; the dispatcher (what users get: the front end, and Triton for batches of
# >= 8 rows on CUDA, so every COUNT) under vllm-api, the pinned Triton path without the front end under vllm-triton,
# the pinned PyTorch path under vllm-api. vllm-noise and vllm-topp are the two reduced findings of the run of 18abd63
# (docs/conformance.md): many-tail with vLLM's fp32 exponential noise and with use_fp64_gumbel; the top-p boundary
# on the Triton and the PyTorch path.
job_vllm-triton() { engine_job vllm-triton "process:$V --path triton --no-front-end" vllm-triton smoke identify props; }
job_vllm-dispatch() { engine_job vllm-dispatch "process:$V --path dispatch" vllm-api smoke identify props; }
job_vllm-pytorch() { engine_job vllm-pytorch "process:$V --path pytorch" vllm-api smoke identify; }
# Window seeding draws a whole window (L lanes x V) per (seed, window) group of a call: on CUDA L(V) is up to 16384,
# so the smoke's sparse SAMPLE calls (the stream checks, one row per seed) cost 16384 draws each and no case ended in
# 400 s (H100 runs of 2026-11-27); --lanes 64 draws the CPU's windows.
job_vllm-window() { engine_job vllm-window "process:$V --path dispatch --seeding window --lanes 64" vllm-api smoke; }
# The dispatcher under vllm-api-triton (the front end on the Triton path's rules, D): what a user's batch of >= 8
# rows gets; the smoke's COUNT windows are such batches, its single-row calls take the PyTorch path.
job_vllm-dispatch-api-triton() {
  engine_job vllm-dispatch-api-triton "process:$V --path dispatch" vllm-api-triton smoke
}
# The property failures the cut runs of the second GPU run kept no counterexample of: one property a run, so that a
# failure prints its replay line (`properties --reproduce`) before the deadline.
job_props-reduce() {
  local p
  for p in batch-invariance; do
    jstep props-reduce "vllm-dispatch.$p" "$(share 20)" properties --profile vllm-api \
      --sampler "process:$V --path dispatch" "${props[@]}" --property "$p"
  done
  for p in greedy-limits support-containment seeded-determinism batch-invariance; do
    jstep props-reduce "mrv2.$p" "$(share 20)" properties --profile vllm-api --sampler "process:$V --mrv2 --path dispatch" \
      "${props[@]}" --property "$p"
  done
}
job_vllm-noise() {
  jstep vllm-noise many-tail.fp32.vllm-api "$(share 50)" run --suite "$suites/many-tail.suite.json" --profile vllm-api \
    --sampler "process:$V --path pytorch"
  jstep vllm-noise many-tail.fp64.vllm-api rest run --suite "$suites/many-tail.suite.json" --profile vllm-api \
    --sampler "process:$V --path pytorch --fp64-gumbel"
}
job_vllm-topp() {
  jstep vllm-topp topp.triton.vllm-triton "$(share 50)" run --suite "$suites/topp.suite.json" --profile vllm-triton \
    --sampler "process:$V --path triton --no-front-end"
  jstep vllm-topp topp.pytorch.vllm-triton rest run --suite "$suites/topp.suite.json" --profile vllm-triton \
    --sampler "process:$V --path pytorch --no-front-end"
}
job_mrv2() { engine_job mrv2 "process:$V --mrv2 --path dispatch" vllm-api smoke identify props; }
# TokenSpeed under its own profile, tokenspeed (reference/src/profiles.cpp; identify on triton_full: every probe
# consistent with it but V2 T=5e-6, the engine's fp32 scores, fifth run). The profile refuses top_k >= 128 as the
# engine does, so smoke's near-flat case (top_k = 200) is skipped by the profile itself (exact:tokenspeed skips it
# too): --allow-skipped. The "triton" backend ignores
# min-p (base.py:108-110; finding 3): its min-p cases fail by the engine's design (docs/conformance.md).
job_ts-triton() {
  SMOKE_EXTRA=--allow-skipped engine_job ts-triton "process:$TS --backend triton" tokenspeed smoke identify
}
job_ts-full() {
  SMOKE_EXTRA=--allow-skipped engine_job ts-full "process:$TS --backend triton_full" tokenspeed smoke identify props
}
# The fourth run's open TokenSpeed items: triton_full's identify alone (cut three times at up to 397 s: its probes'
# seconds are printed, and a cut run prints what its finished probes exclude), and the top_p route's argmax fallback
# at low top_p (README item 1; the PR's review, seed 003), with positions spaced so finding 1 adds no variance.
job_ts-full-identify() { jstep ts-full-identify identify rest identify --sampler "process:$TS --backend triton_full"; }
job_ts-low-top-p() {
  jstep ts-low-top-p tokenspeed-low-top-p.tokenspeed rest run --suite "$suites/tokenspeed-low-top-p.suite.json" \
    --profile tokenspeed --sampler "process:$TS --backend triton --position-stride 16"
}
# The many-tail finding and its remedy: the case with TokenSpeed's fp32 Gumbel noise, then with the noise in fp64 in
# a copy of the tree (adapters/tokenspeed/noise_remedy.py; its reports name the sampler tokenspeed@...+modified).
job_ts-noise() {
  local copy="${TMPDIR:-/tmp}/tokenspeed-fp64-noise"
  rm -rf "$copy"
  "$py" "$adapters/tokenspeed/noise_remedy.py" "$SAMPLECHECK_TOKENSPEED_SRC" "$copy" >> "$work/ts-noise.summary" 2>&1
  jstep ts-noise many-tail.fp32.tokenspeed "$(share 50)" run --suite "$suites/many-tail.suite.json" \
    --profile tokenspeed --sampler "process:$TS --backend triton"
  jstep ts-noise many-tail.fp64.tokenspeed rest run --suite "$suites/many-tail.suite.json" --profile tokenspeed \
    --sampler "process:$py $adapters/tokenspeed/serve.py --src $copy --device $dev --backend triton"
}
# SGLang's seeded path asserts against min-p (sampler.py:476-479; the adapter refuses min_p > 0 before the draw):
# smoke without the min-p cases, and the property suites with min_p held at 0, as for TensorRT-LLM below (the H100
# run of 2026-11-27 met
# the assert in 16 smoke cases: minp, combined, V4-minp-order, gen/3 and all 12 batch/b* rows, one min-p row
# failing the batch; the other 14 failures and identify's were the adapter's torch.compile import, fixed).
job_sglang-seeded() {
  engine_job sglang-seeded "process:$SG --seeded" sglang-torch "smoke=$suites/smoke-no-min-p.suite.json" identify \
    props-no-min-p
}
job_sglang-unseeded() { engine_job sglang-unseeded "process:$SG" sglang-torch smoke; }
# TensorRT-LLM's vanilla path has no min-p (the adapter refuses min_p > 0): smoke without the min-p cases; identify
# excludes every profile by its min-p probe (the others are informative); the property suites with min_p held at 0
# (`properties --no-min-p`: the generators otherwise draw min_p for every profile, and each property would fail on
# the refusal).
job_trtllm() {
  engine_job trtllm "process:$TR" trtllm-torch "smoke=$suites/smoke-no-min-p.suite.json" identify props-no-min-p
}
# The verifiers: spec-smoke (spec-standard is --phase sources-standard). TokenSpeed accepts a draft iff it equals
# the target's own draw (verify.py): the law of speculative sampling only for one-hot drafts, so its verifier runs
# spec-smoke with every draft one-hot (adapters/suites/spec-smoke-one-hot.suite.json).
# vLLM's front end refuses min_p > 1e-5 with speculative decoding (sampling_params.py:870-882; the adapter too), so
# its verifiers run spec-smoke without min-p (adapters/suites/spec-smoke-no-min-p.suite.json); v1-verifier-raw runs
# the whole spec-smoke through the rejection sampler without the front end (--no-front-end): the min-p rows show
# what the guard hides (v1 applies no min-p to drafted rows: upstream vllm-project/vllm#42744).
job_v1-verifier() {
  engine_job v1-verifier "process:$V --path dispatch --verifier" vllm-api "spec=$suites/spec-smoke-no-min-p.suite.json"
}
job_v1-verifier-raw() { engine_job v1-verifier-raw "process:$V --path dispatch --verifier --no-front-end" vllm spec; }
job_mrv2-verifier() {
  engine_job mrv2-verifier "process:$V --mrv2 --path dispatch --verifier" vllm-api \
    "spec=$suites/spec-smoke-no-min-p.suite.json"
}
job_ts-verifier() {
  engine_job ts-verifier "process:$TS --backend triton_full --verifier" tokenspeed \
    "spec=$suites/spec-smoke-one-hot.suite.json"
}
source_jobs=(pytest vllm-noise vllm-topp vllm-dispatch vllm-triton vllm-pytorch vllm-window mrv2 sglang-seeded
             sglang-unseeded trtllm ts-triton ts-full v1-verifier v1-verifier-raw mrv2-verifier ts-verifier
             vllm-dispatch-api-triton props-reduce ts-full-identify ts-low-top-p ts-noise)

if [ "$phase" = sources ]; then
  pids=() i=0 ran=()
  for job in "${source_jobs[@]}"; do
    wanted "$job" || continue
    ( export CUDA_VISIBLE_DEVICES=$((i % gpus)); "job_$job" ) &
    pids+=($!) ran+=("$job")
    i=$((i + 1))
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  for job in "${ran[@]}"; do cat "$work/$job.summary" >> "$log" 2>/dev/null; done
fi

if [ "$phase" = sources-standard ]; then
  # Python-bound clients: the throughput probe plans the run; --force lets a plan past 6 hours start, the deadline
  # cuts it, its journal is resumed by the next call (ENGINES_STATE). vLLM's v1 paths count on their unseeded
  # production path (--count-seeding window: protocol bit 512), SAMPLE stays seeded per request.
  i=0 pids=() ran=()
  IFS=, read -r -a std_jobs <<< "${only:-vllm-dispatch}"
  for job in "${std_jobs[@]}"; do
    suite=standard skipped=()
    case "$job" in
      vllm-dispatch) spec="process:$V --path dispatch --count-seeding window"; profile=vllm-api ;;
      vllm-triton) spec="process:$V --path triton --no-front-end --count-seeding window"; profile=vllm-triton ;;
      vllm-pytorch) spec="process:$V --path pytorch --count-seeding window"; profile=vllm-api ;;
      mrv2) spec="process:$V --mrv2 --path dispatch"; profile=vllm-api ;;
      sglang-unseeded) spec="process:$SG"; profile=sglang-torch
                       skipped=(--allow-skipped) ;;  # standard's sentinel top_k = 0, invalid under sglang-torch
      trtllm) spec="process:$TR"; profile=trtllm-torch  # vanilla.py has no min-p
              suite="$suites/standard-no-min-p.suite.json" ;;
      transformers) spec="process:$py $(realpath examples/python)/transformers_client.py --device $dev"; profile=hf ;;
      ts-full) spec="process:$TS --backend triton_full"; profile=tokenspeed
               skipped=(--allow-skipped) ;;  # the profile refuses standard's top_k >= 128 cases, as the engine does
      sglang-seeded) spec="process:$SG --seeded"; profile=sglang-torch  # the seeded path refuses min-p
                     suite="$suites/standard-no-min-p.suite.json"
                     # sglang-torch calls standard's sentinel top_k = 0 invalid: that case is skipped by the profile
                     # (exact:sglang-torch too, seed 90419), so a skip is not a failure of the engine
                     skipped=(--allow-skipped) ;;
      v1-verifier) spec="process:$V --path dispatch --verifier"; profile=vllm-api  # the front end refuses min-p
                   suite="$suites/spec-standard-no-min-p.suite.json" ;;
      mrv2-verifier) spec="process:$V --mrv2 --path dispatch --verifier"; profile=vllm-api
                     suite="$suites/spec-standard-no-min-p.suite.json" ;;
      *) echo "== sources-standard: no standard run defined for '$job'" >> "$log"; continue ;;
    esac
    ( export CUDA_VISIBLE_DEVICES=$((i % gpus))
      case "$job" in
        *-verifier) jstep "$job" "$(basename "$suite" .suite.json).$profile" rest run --suite "$suite" \
                      --profile "$profile" --verifier "$spec" --force ${STANDARD_TV:+--tv "$STANDARD_TV"} ;;
        *) jstep "$job" "$(basename "$suite" .suite.json).$profile" rest run --suite "$suite" --profile "$profile" \
             --sampler "$spec" --force "${skipped[@]}" ${STANDARD_TV:+--tv "$STANDARD_TV"} \
             ${STANDARD_BUDGET:+--budget "$STANDARD_BUDGET"} ;;
      esac ) &
    pids+=($!) ran+=("$job")
    i=$((i + 1))
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  for job in "${ran[@]}"; do cat "$work/$job.summary" >> "$log" 2>/dev/null; done
fi
