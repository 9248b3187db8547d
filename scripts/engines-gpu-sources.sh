# engines-gpu-sources.sh: sourced by scripts/engines-gpu-run for --phase sources and --phase sources-standard (issue
# 29): the engines' own sampler files (vLLM v0.26 v1 Triton/dispatch/PyTorch paths, Model Runner V2, TokenSpeed's
# Triton backends, SGLang seeded and unseeded, TensorRT-LLM vanilla.py, and the rejection samplers as verifiers)
# served by adapters/<engine>/serve.py from the trees in .engines-src/ (carried: git-ignored).
#
# --phase sources: every job below at once, in the background, job i on GPU i mod N (several a GPU: the clients are
# Python-bound, the GPU mostly idle); each job a series of steps, each cut at min(its share, the deadline). A smoke or
# spec run cut at the deadline keeps its journal: the next call with ENGINES_STATE=<the previous results/> resumes it
# (--resume). Every job writes its own summary; they are joined into engines-gpu.txt at the end.
# --phase sources-standard: the standard suite at its own plan (TV 1e-3, power 0.99; STANDARD_TV to change) of the
# jobs named by --only (default vllm-dispatch), each unsharded on its own GPU, journaled and resumed across calls.
#
# Environment: ENGINES_SRC (default .engines-src), PYTHON (default python3), SAMPLECHECK_<ENGINE>_SRC (default the
# tree of that engine under ENGINES_SRC), SMOKE_MAX_DRAWS (a --max-draws cap for the smoke steps; default none),
# PROPERTY_CASES (--max-success of the property steps; default 20), ENGINES_DEVICE (default cuda; cpu tries the
# plumbing of the pure-torch jobs without a GPU). Uses $sc, $work, $log, left(), wanted() of
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
suites="$(realpath docs/conformance)"

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
               identify) extra=(--json "$base.json") ;; esac
  echo "== $job/$name ($(date -u +%T), GPU $CUDA_VISIBLE_DEVICES, limit $limit s): samplecheck $* ${extra[*]}" \
    >> "$jlog"
  local t0=$SECONDS
  timeout --signal=INT --kill-after=15 "$limit" "$sc" "$@" "${extra[@]}" > "$base.txt" 2>&1
  local rc=$?
  echo "exit $rc after $((SECONDS - t0)) s$([ $rc -eq 124 ] && echo ' (cut at its deadline)')" >> "$jlog"
  grep -E "^suite |^sampler |cases:|VERDICT|FAIL  |ERROR|consistent with|excluded by|passed,|FAILED|lowest achieved" \
    "$base.txt" | head -60 >> "$jlog"
  grep -E "smallest p|draws in|resuming" "$base.txt" | head -5 >> "$jlog"
  if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then tail -8 "$base.txt" >> "$jlog"; fi
}

smoke_cap=(${SMOKE_MAX_DRAWS:+--max-draws "$SMOKE_MAX_DRAWS"})
props=(--seed 20260401 --max-success "${PROPERTY_CASES:-20}" --tolerance 1e-3)

# The jobs: one function each (name = what --only selects). Profiles: vllm-api for vLLM with its SamplingParams front
# end, vllm-triton for the Triton top-k/top-p path without it (the sampler files alone), sglang-torch, trtllm-torch;
# TokenSpeed has no profile of its own yet: judged under vllm-triton (exactly k) after identify speaks.
job_pytest() {
  local jlog="$work/pytest.summary" t0=$SECONDS
  echo "== pytest ($(date -u +%T), GPU $CUDA_VISIBLE_DEVICES): the adapters' tests with triton and CUDA" >> "$jlog"
  timeout --kill-after=10 "$(( $(left) < 240 ? $(left) : 240 ))" "$py" -m pytest -q -rs -p no:cacheprovider \
    "$adapters/vllm" "$adapters/sglang" "$adapters/tokenspeed" "$adapters/trtllm" "$adapters/test_engine_serve.py" \
    > "$work/pytest.txt" 2>&1
  echo "exit $? after $((SECONDS - t0)) s" >> "$jlog"
  grep -E "passed|failed|error|SKIPPED|FAILED|Error" "$work/pytest.txt" | tail -30 >> "$jlog"
}
# engine_job <job> <sampler> <profile> <what>...: the job's steps, each of: identify, smoke (or smoke=<suite file>:
# the smoke step on that suite), props (the property suites), each cut at its share (the last step takes the rest).
engine_job() {
  local job="$1" s="$2" profile="$3"; shift 3
  local n=$# i=0 what share
  for what in "$@"; do
    i=$((i + 1)); share=$([ $i -eq $n ] && echo rest || echo 150)
    case "$what" in
      identify) jstep "$job" identify "$share" identify --sampler "$s" ;;
      smoke) [ "$share" = rest ] || share=300
             jstep "$job" "smoke.$profile" "$share" run --suite smoke --profile "$profile" --sampler "$s" \
               "${smoke_cap[@]}" ;;
      smoke=*) [ "$share" = rest ] || share=300
               local suite="${what#smoke=}"
               jstep "$job" "$(basename "$suite" .suite.json).$profile" "$share" run --suite "$suite" \
                 --profile "$profile" --sampler "$s" "${smoke_cap[@]}" ;;
      props) jstep "$job" properties "$share" properties --profile "$profile" --sampler "$s" "${props[@]}" ;;
      spec) [ "$share" = rest ] || share=240
            jstep "$job" "spec-smoke.$profile" "$share" run --suite spec-smoke --profile "$profile" --verifier "$s" ;;
      spec-standard) jstep "$job" "spec-standard.$profile" "$share" run --suite spec-standard --profile "$profile" \
                       --verifier "$s" ;;
    esac
  done
}
job_vllm-triton() {
  jstep vllm-triton identify-front-end 120 identify --sampler "process:$V --path triton"
  engine_job vllm-triton "process:$V --path triton --no-front-end" vllm-triton identify smoke props
}
job_vllm-dispatch() { engine_job vllm-dispatch "process:$V --path dispatch" vllm-api identify smoke props; }
job_vllm-pytorch() { engine_job vllm-pytorch "process:$V --path pytorch" vllm-api identify smoke; }
job_vllm-window() { engine_job vllm-window "process:$V --path dispatch --seeding window" vllm-api smoke; }
job_mrv2() { engine_job mrv2 "process:$V --mrv2 --path dispatch" vllm-api identify smoke props; }
job_ts-triton() { engine_job ts-triton "process:$TS --backend triton" vllm-triton identify smoke; }
job_ts-full() { engine_job ts-full "process:$TS --backend triton_full" vllm-triton identify smoke props; }
job_sglang-seeded() { engine_job sglang-seeded "process:$SG --seeded" sglang-torch identify smoke props; }
job_sglang-unseeded() { engine_job sglang-unseeded "process:$SG" sglang-torch smoke; }
job_trtllm() {
  engine_job trtllm "process:$TR" trtllm-torch identify "smoke=$suites/smoke-no-min-p.suite.json" props
}
job_v1-verifier() {
  engine_job v1-verifier "process:$V --path dispatch --verifier" vllm-api spec spec-standard
}
job_mrv2-verifier() {
  engine_job mrv2-verifier "process:$V --mrv2 --path dispatch --verifier" vllm-api spec spec-standard
}
job_ts-verifier() {
  engine_job ts-verifier "process:$TS --backend triton_full --verifier" vllm-triton spec spec-standard
}
source_jobs=(pytest vllm-triton vllm-dispatch mrv2 ts-full sglang-seeded trtllm v1-verifier mrv2-verifier ts-verifier
             vllm-pytorch ts-triton sglang-unseeded vllm-window)

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
  # cuts it, its journal is resumed by the next call (ENGINES_STATE).
  i=0 pids=() ran=()
  IFS=, read -r -a std_jobs <<< "${only:-vllm-dispatch}"
  for job in "${std_jobs[@]}"; do
    case "$job" in
      vllm-dispatch) spec="process:$V --path dispatch"; profile=vllm-api ;;
      vllm-triton) spec="process:$V --path triton --no-front-end"; profile=vllm-triton ;;
      mrv2) spec="process:$V --mrv2 --path dispatch"; profile=vllm-api ;;
      ts-full) spec="process:$TS --backend triton_full"; profile=vllm-triton ;;
      sglang-seeded) spec="process:$SG --seeded"; profile=sglang-torch ;;
      *) echo "== sources-standard: no standard run defined for '$job'" >> "$log"; continue ;;
    esac
    ( export CUDA_VISIBLE_DEVICES=$((i % gpus))
      jstep "$job" "standard.$profile" rest run --suite standard --profile "$profile" --sampler "$spec" --force \
        ${STANDARD_TV:+--tv "$STANDARD_TV"} ) &
    pids+=($!) ran+=("$job")
    i=$((i + 1))
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  for job in "${ran[@]}"; do cat "$work/$job.summary" >> "$log" 2>/dev/null; done
fi
