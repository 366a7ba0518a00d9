#!/usr/bin/env bash
# The GPU check: installs what is missing from a wheelhouse (offline), then proves on one
# NVIDIA GPU what that machine can prove: versions, ONNX Runtime's GPU providers (or why
# they are absent), Inductor and AOTInductor built, validated at fp32/TF32/bf16/fp16 and
# timed with CUDA events on the caller's and the dedicated stream (a conv model and a
# transformer), the CUDA memory probe, the `gpu` tests, TunedModule's per-call overhead on
# CUDA and a full `demo` on cuda. Logs in one folder; a summary table at the end.
#
#   bash scripts/gpu-check.sh            # from the project root, on a machine with a GPU
#   bash scripts/gpu-check.sh --dry-run  # print the plan and exit
#
# Environment: PYTHON (default: .venv/bin/python or python3, whichever has a CUDA torch,
# else the first found), OUT (log folder, default runs/gpu-check/<time>), WHEELS (a folder
# of wheels, default ./wheelhouse when it exists: missing small dependencies are installed
# from it offline into SITE, default /tmp/aitune-fp-site, put on PYTHONPATH), BUDGET_S
# (total seconds, default 530).
# The table lists every step and item as PASS, FAIL or SKIP with its reason; a SKIP is
# never counted as a PASS. Exit 0 only when nothing that ran failed (without a CUDA device
# the GPU steps are SKIPs: "no CUDA device").
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
BUDGET_S="${BUDGET_S:-530}"
WHEELS="${WHEELS:-}"
[ -z "$WHEELS" ] && [ -d wheelhouse ] && WHEELS=wheelhouse
SITE="${SITE:-/tmp/aitune-fp-site}"
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}" PY WHEELS SITE PYTHONUNBUFFERED=1
START=$(date +%s)
STEPS=(deps versions cuda providers backends memory gpu-tests overhead demo)
declare -A LIMIT=([deps]=30 [versions]=25 [cuda]=15 [providers]=25 [backends]=180
  [memory]=20 [gpu-tests]=55 [overhead]=20 [demo]=120)
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
  for s in "${STEPS[@]}"; do echo "step $s (limit ${LIMIT[$s]}s)"; done
  echo "elastic: $ELASTIC (also gets what earlier steps leave unused)"
  echo "backends cases (the tuner's own configs on float32 models; core first):"
  PYTHONPATH="$PWD" "$PY" scripts/gpu_check.py plan || echo "(the plan needs torch and aitune_fp)"
  exit 0
fi
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"
: >"$RESULTS"
: >"$OUT/summary.txt"
row() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RESULTS"; echo "$1 $2 ${3:+(${3}s)} $4"; }

# run NAME CMD...: the command under the step's limit (never past the total budget), output
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
  if declare -F "$1" >/dev/null; then  # a function of this script: run it in a child bash
    GPU_CHECK_STEP_S=$limit timeout --kill-after=10 "$limit" \
      bash -c "$(declare -f has install_missing); DEPS='$DEPS'; $*" >"$OUT/$name.log" 2>&1
  else
    GPU_CHECK_STEP_S=$limit timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1
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
  return $rc
}

has() { "$PY" -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('$1') is None)" 2>/dev/null; }

install_missing() {
  local missing=()
  for pair in $DEPS; do has "${pair%%:*}" || missing+=("${pair##*:}"); done
  if [ ${#missing[@]} -eq 0 ]; then echo "nothing missing"; return 0; fi
  if [ -z "${WHEELS:-}" ] || [ ! -d "$WHEELS" ]; then
    echo "missing ${missing[*]}; no wheelhouse (WHEELS) to install them from"; return 1
  fi
  echo "missing ${missing[*]}: installing from $WHEELS (offline) into $SITE"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --find-links "$WHEELS" --target "$SITE" "${missing[@]}" || return 1
  for pair in $DEPS; do has "${pair%%:*}" || { echo "still missing ${pair##*:}"; return 1; }; done
  echo "installed ${missing[*]}"
}

echo "gpu-check $(date -u +%FT%TZ) python=$PY logs=$OUT wheels=${WHEELS:-none}"
run deps install_missing
run versions "$PY" -m aitune_fp.effects.backends.stack
cp "$OUT/versions.log" "$OUT/stack.json" 2>/dev/null
run cuda "$PY" scripts/gpu_check.py cuda
cuda_rc=$?
if [ "$cuda_rc" -eq 0 ]; then
  run providers "$PY" scripts/gpu_check.py providers
  run backends "$PY" scripts/gpu_check.py backends
  run memory "$PY" scripts/gpu_check.py memory
  run gpu-tests "$PY" scripts/gpu_check.py gpu-tests
  run overhead "$PY" scripts/gpu_check.py overhead
  run demo "$PY" -m aitune_fp demo --device cuda --model cnn --out "$OUT/demo" --no-plot \
    --cache-dir "$OUT/cache" --verify-seconds 1 --max-batch-size 64
  grep -E "Selected|Speedup|failed" "$OUT/demo.log" | head -n 5
else
  why="no CUDA device"; [ "$cuda_rc" -ne 3 ] && why="not run: the cuda step failed"
  for s in providers backends memory gpu-tests overhead demo; do row SKIP "$s" "" "$why"; done
fi
echo "done in $(( $(date +%s) - START ))s"
# the table (gpu_summary.py needs no torch; any python3 will do, else the raw rows)
"$PY" scripts/gpu_summary.py "$OUT"; rc=$?
if ! grep -q "^verdict:" "$OUT/summary.txt"; then python3 scripts/gpu_summary.py "$OUT"; rc=$?; fi
if ! grep -q "^verdict:" "$OUT/summary.txt"; then
  cat "$RESULTS"; rc=0; grep -q "^FAIL" "$RESULTS" && rc=1
fi
exit "$rc"
