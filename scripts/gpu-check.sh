#!/usr/bin/env bash
# The GPU check: installs what is missing or outdated (from a wheelhouse offline, else from
# the package index), then proves on one NVIDIA GPU what that machine can prove: versions,
# ONNX Runtime's GPU providers (or why they are absent), the CUDA memory probe, TunedModule's
# per-call overhead on CUDA, the `gpu` tests, Inductor and AOTInductor built, validated at
# fp32/TF32/bf16/fp16 and timed with CUDA events on the caller's and the dedicated stream
# (cheap cases first), and a short `demo` on cuda. Logs in one folder; a summary table at
# the end, and a partial one (summary.txt) after every step.
#
#   bash scripts/gpu-check.sh            # from the project root, on a machine with a GPU
#   bash scripts/gpu-check.sh --dry-run  # print every step with its limit, and exit
#
# Environment: PYTHON (default: .venv/bin/python or python3, whichever has a CUDA torch,
# else the first found), OUT (log folder, default runs/gpu-check/<time>), WHEELS (a folder
# of wheels, default ./wheelhouse when it exists; without one the package index is used),
# SITE (where missing or outdated dependencies go, default /tmp/aitune-fp-site, put first
# on PYTHONPATH), BUDGET_S (total seconds, default 360: the sum of the step limits below,
# so that the check and a rerun fit in a 15-minute loan).
# Rules: every step runs under its own limit (LIMIT, the one source of docs/gpu.md's step
# table: scripts/gpu_steps.py), never past what is left of the budget; the elastic step
# (backends) also gets what earlier steps left unused, the later steps' limits kept in
# reserve. The table lists every step and item as PASS, FAIL or SKIP with its reason; a
# SKIP is never counted as a PASS. Exit 0 only when nothing that ran failed (without a
# CUDA device the GPU steps are SKIPs: "no CUDA device").
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
# the python: PYTHON when set; else the first of .venv/bin/python and python3 whose torch is
# a CUDA build (a carried or leftover CPU venv never wins over the machine's CUDA torch),
# else the first that exists
pick_python() {
  local p first=""
  for p in .venv/bin/python python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    [ -z "$first" ] && first=$p
    if "$p" -c "import sys, torch; sys.exit(torch.version.cuda is None)" 2>/dev/null; then
      echo "$p"; return
    fi
  done
  echo "${first:-python3}"
}
if [ -n "${PYTHON:-}" ]; then PY="$PYTHON"; else PY=$(pick_python); fi
OUT="${OUT:-runs/gpu-check/$(date +%Y%m%d-%H%M%S)}"
BUDGET_S="${BUDGET_S:-360}"
WHEELS="${WHEELS:-}"
[ -z "$WHEELS" ] && [ -d wheelhouse ] && WHEELS=wheelhouse
SITE="${SITE:-/tmp/aitune-fp-site}"
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}" PY WHEELS SITE PYTHONUNBUFFERED=1
START=$(date +%s)
# the steps in order (cheap ones first) and their limits in seconds; they sum to 360
STEPS=(deps versions cuda providers memory overhead gpu-tests backends demo)
declare -A LIMIT=([deps]=30 [versions]=15 [cuda]=10 [providers]=15 [memory]=15
  [overhead]=15 [gpu-tests]=60 [backends]=150 [demo]=50)
# backends is elastic: it also gets what the steps before it left unused, keeping the
# later steps' limits in reserve (its extra cases run while its time lasts)
ELASTIC=backends
# module:distribution pairs aitune_fp, its CLI, the ONNX exporter and the gpu tests import
DEPS="returns:returns pyrsistent:pyrsistent cloudpickle:cloudpickle msgspec:msgspec
  typing_extensions:typing_extensions numpy:numpy google.protobuf:protobuf onnx:onnx
  ml_dtypes:ml_dtypes packaging:packaging onnx_ir:onnx_ir onnxscript:onnxscript
  pygments:pygments mdurl:mdurl markdown_it:markdown-it-py rich:rich iniconfig:iniconfig
  pluggy:pluggy pytest:pytest sortedcontainers:sortedcontainers hypothesis:hypothesis"

if [ "$DRY" = 1 ]; then
  echo "python: $PY; logs: $OUT; wheels: ${WHEELS:-none}; budget: ${BUDGET_S}s"
  total=0
  for s in "${STEPS[@]}"; do echo "step $s (limit ${LIMIT[$s]}s)"; total=$((total + LIMIT[$s])); done
  echo "limits sum: ${total}s"
  echo "elastic: $ELASTIC (also gets what earlier steps leave unused)"
  echo "backends cases (the tuner's own configs on float32 models; cheap ones first):"
  PYTHONPATH="$PWD" "$PY" scripts/gpu_check.py plan || echo "(the plan needs torch and aitune_fp)"
  exit 0
fi
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"
: >"$RESULTS"
: >"$OUT/summary.txt"
# partial STEP: summary.txt rewritten with the table so far, one line of counts printed (a
# run cut short by the device tool's own limit still leaves its summary)
partial() {
  "$PY" scripts/gpu_summary.py "$OUT" --partial "$1" 2>/dev/null \
    || python3 scripts/gpu_summary.py "$OUT" --partial "$1" 2>/dev/null || true
}
row() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RESULTS"; echo "$1 $2 ${3:+(${3}s)} $4"; }

# run NAME CMD...: the command under the step's limit (never past the total budget; its last
# 3 s are the grace between timeout's TERM and KILL, so a step never outlasts it), output
# to $OUT/NAME.log, one result row. Exit 0 PASS, 3 SKIP (the log's last SKIP line says why),
# anything else FAIL.
run() {
  local name=$1; shift
  local left=$((BUDGET_S - ($(date +%s) - START)))
  local limit=${LIMIT[$name]}
  if [ "$name" = "$ELASTIC" ]; then
    local reserve=0 later=0 s
    for s in "${STEPS[@]}"; do
      [ "$later" = 1 ] && reserve=$((reserve + LIMIT[$s]))
      [ "$s" = "$name" ] && later=1
    done
    [ $((left - reserve)) -gt "$limit" ] && limit=$((left - reserve))
  fi
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 5 ]; then row FAIL "$name" 0 "not run: the ${BUDGET_S}s budget is spent"; return 1; fi
  local t0; t0=$(date +%s)
  # the step's end as an epoch second (TERM comes then): Python steps budget from it, so
  # their own start-up (importing torch) is counted
  export GPU_CHECK_STEP_S=$limit GPU_CHECK_STEP_END=$((t0 + limit - 3))
  if declare -F "$1" >/dev/null; then  # a function of this script: run it in a child bash
    timeout --kill-after=3 $((limit - 3)) \
      bash -c "$(declare -f install_missing); DEPS='$DEPS'; $*" >"$OUT/$name.log" 2>&1
  else
    timeout --kill-after=3 $((limit - 3)) "$@" >"$OUT/$name.log" 2>&1
  fi
  local rc=$?
  local took=$(( $(date +%s) - t0 ))
  local why; why=$(grep -E "^SKIP " "$OUT/$name.log" | tail -n 1 | cut -d' ' -f2- | cut -c1-200)
  local said; said=$(grep -E "^(PASS |installed |nothing missing)" "$OUT/$name.log" | tail -n 1 | cut -c1-200)
  case $rc in
    0) row PASS "$name" "$took" "$said";;
    3) row SKIP "$name" "$took" "${why:-nothing to run here}";;
    124|137) row FAIL "$name" "$took" "timed out after ${limit}s (log: $OUT/$name.log)";;
    *) row FAIL "$name" "$took" "exit $rc (log: $OUT/$name.log)";;
  esac
  partial "$name"
  return $rc
}

# install_missing: the deps step (missing or outdated dependencies into SITE)
source scripts/gpu_deps.sh

echo "gpu-check $(date -u +%FT%TZ) python=$PY logs=$OUT wheels=${WHEELS:-none}"
run deps install_missing
run versions "$PY" -m aitune_fp.effects.backends.stack
cp "$OUT/versions.log" "$OUT/stack.json" 2>/dev/null
run cuda "$PY" scripts/gpu_check.py cuda
cuda_rc=$?
if [ "$cuda_rc" -eq 0 ]; then
  run providers "$PY" scripts/gpu_check.py providers
  run memory "$PY" scripts/gpu_check.py memory
  run overhead "$PY" scripts/gpu_check.py overhead
  run gpu-tests "$PY" scripts/gpu_check.py gpu-tests
  run backends "$PY" scripts/gpu_check.py backends
  # eager and Inductor only: two cold workers, no AOTInductor compile (the backends step
  # proves the compilers); the run ends well inside the step's limit
  run demo "$PY" -m aitune_fp demo --device cuda --model cnn --out "$OUT/demo" --no-plot \
    --cache-dir "$OUT/cache" --verify-seconds 1 --max-batch-size 16 --backends eager,inductor
  grep -E "Selected|Speedup|failed" "$OUT/demo.log" | head -n 5
else
  why="no CUDA device"; [ "$cuda_rc" -ne 3 ] && why="not run: the cuda step failed"
  for s in "${STEPS[@]:3}"; do row SKIP "$s" "" "$why"; done
fi
echo "done in $(( $(date +%s) - START ))s"
# the table (gpu_summary.py needs no torch; any python3 will do, else the raw rows)
"$PY" scripts/gpu_summary.py "$OUT"; rc=$?
if ! grep -q "^verdict:" "$OUT/summary.txt"; then python3 scripts/gpu_summary.py "$OUT"; rc=$?; fi
if ! grep -q "^verdict:" "$OUT/summary.txt"; then
  cat "$RESULTS"; rc=0; grep -q "^FAIL" "$RESULTS" && rc=1
fi
exit "$rc"
