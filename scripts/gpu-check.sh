#!/usr/bin/env bash
# The GPU check: versions, providers really used, every GPU backend built/validated/timed,
# the `gpu` tests, the overhead benchmark and a CUDA demo; logs in one folder; < 9 minutes.
#
#   bash scripts/gpu-check.sh            # from the project root, on a machine with a GPU
#   bash scripts/gpu-check.sh --dry-run  # print the plan and exit
#
# Environment: PYTHON (default .venv/bin/python, else python3; a preinstalled CUDA torch
# works without a venv), OUT (log folder, default runs/gpu-check/<time>), WHEELS (a folder
# of wheels: missing small dependencies are installed from it, offline), BUDGET_S (total
# seconds, default 530). A step whose library is missing is skipped with the reason;
# without a CUDA device the script stops after the versions with "no CUDA device" (exit 0).
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
if [ -n "${PYTHON:-}" ]; then PY="$PYTHON"
elif [ -x .venv/bin/python ]; then PY=.venv/bin/python
else PY=python3; fi
OUT="${OUT:-runs/gpu-check/$(date +%Y%m%d-%H%M%S)}"
BUDGET_S="${BUDGET_S:-530}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PY WHEELS="${WHEELS:-}"
START=$(date +%s)
STEPS=(deps versions cuda providers backends gpu-tests overhead demo)
declare -A LIMIT=([deps]=60 [versions]=45 [cuda]=30 [providers]=60 [backends]=150
  [gpu-tests]=120 [overhead]=60 [demo]=100)

if [ "$DRY" = 1 ]; then
  echo "python: $PY; logs: $OUT; budget: ${BUDGET_S}s"
  for s in "${STEPS[@]}"; do echo "step $s (limit ${LIMIT[$s]}s)"; done
  exit 0
fi
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }

# run NAME CMD...: the command under the step's limit (never past the total budget),
# output to $OUT/NAME.log, one summary line with the status and seconds.
run() {
  local name=$1; shift
  local left=$((BUDGET_S - ($(date +%s) - START)))
  local limit=${LIMIT[$name]}
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 5 ]; then note "SKIP $name: the ${BUDGET_S}s budget is spent"; return 0; fi
  local t0; t0=$(date +%s)
  if declare -F "$1" >/dev/null; then  # a function of this script: run it in a child bash
    timeout --kill-after=10 "$limit" bash -c "$(declare -f has "$1"); $*" >"$OUT/$name.log" 2>&1
  else
    timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1
  fi
  local rc=$?
  local took=$(( $(date +%s) - t0 ))
  case $rc in
    0) note "PASS $name (${took}s)";;
    3) note "SKIP $name (${took}s)";;
    124|137) note "FAIL $name: timed out after ${limit}s (log: $OUT/$name.log)";;
    *) note "FAIL $name: exit $rc (${took}s; log: $OUT/$name.log)";;
  esac
  return $rc
}

has() { "$PY" -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('$1') is None)"; }

install_missing() {
  local missing=()
  for pair in returns:returns pyrsistent:pyrsistent pytest:pytest hypothesis:hypothesis \
      rich:rich onnx:onnx onnxscript:onnxscript; do
    has "${pair%%:*}" || missing+=("${pair##*:}")
  done
  if [ ${#missing[@]} -eq 0 ]; then echo "nothing missing"; return 0; fi
  if [ -z "${WHEELS:-}" ]; then echo "missing ${missing[*]}; no WHEELS folder given"; return 0; fi
  echo "missing ${missing[*]}: installing from $WHEELS (offline)"
  "$PY" -m pip install --no-index --find-links "$WHEELS" "${missing[@]}"
}

note "gpu-check $(date -u +%FT%TZ) python=$PY logs=$OUT"
run deps install_missing
grep -h "missing" "$OUT/deps.log" | sed 's/^/  /' | tee -a "$SUMMARY"
run versions "$PY" -m aitune_fp.effects.backends.stack
cp "$OUT/versions.log" "$OUT/stack.json" 2>/dev/null
run cuda "$PY" scripts/gpu_check.py cuda
if [ $? -ne 0 ]; then
  sed 's/^/  /' "$OUT/cuda.log" | tee -a "$SUMMARY"
  note "no CUDA device: skipped providers, backends, gpu-tests, overhead, demo"
  exit 0
fi
run providers "$PY" scripts/gpu_check.py providers
run backends "$PY" scripts/gpu_check.py backends
for f in providers backends; do grep -E "^(PASS|FAIL|SKIP|INFO) " "$OUT/$f.log" | sed 's/^/  /' | tee -a "$SUMMARY"; done
if has pytest; then
  run gpu-tests "$PY" -m pytest -m gpu -q -rs -p no:cacheprovider tests
  tail -n 3 "$OUT/gpu-tests.log" | sed 's/^/  /' | tee -a "$SUMMARY"
else
  note "SKIP gpu-tests: pytest is not installed (give WHEELS=folder)"
fi
run overhead "$PY" benchmarks/overhead.py --model mlp --blocks 5 --calls 1000
grep -E "overhead|wrapper|timer" "$OUT/overhead.log" | sed 's/^/  /' | tee -a "$SUMMARY"
run demo "$PY" -m aitune_fp demo --device cuda --model mlp --out "$OUT/demo" --no-plot \
  --cache-dir "$OUT/cache"
grep -E "Selected|Speedup|failed" "$OUT/demo.log" | head -n 5 | sed 's/^/  /' | tee -a "$SUMMARY"
note "done in $(( $(date +%s) - START ))s; summary: $SUMMARY"
grep -q "^FAIL" "$SUMMARY" && exit 1
exit 0
