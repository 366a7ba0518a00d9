#!/usr/bin/env bash
# One lent-GPU session's worth of checks when the time is short: the deps from the
# wheelhouse, the fork-server CUDA probe, the demo with the compilers' warm imports off,
# then the backends and gpu-tests steps of gpu-check (logs under $1, default /tmp/gs).
set -uo pipefail
cd "$(dirname "$0")/.."
LOG="${1:-/tmp/gs}"; mkdir -p "$LOG"
SITE=/tmp/aitune-fp-site
python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" wheelhouse/returns-*.whl wheelhouse/pyrsistent-*.whl >"$LOG/deps.log" 2>&1
export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1
timeout 70 python3 scripts/gpu_fork_probe.py >"$LOG/probe.log" 2>&1; echo "probe rc=$?"
grep -E "NO|FAIL|PASS" "$LOG/probe.log" | head -20
AITUNE_FP_WARM_COMPILERS=0 timeout 80 python3 -m aitune_fp demo --device cuda --model cnn \
  --out "$LOG/demo" --no-plot --cache-dir "$LOG/cache" --verify-seconds 1 --max-batch-size 64 \
  >"$LOG/demo.log" 2>&1; echo "demo (warm compilers off) rc=$?"
grep -E "Selected|Speedup|max batch size|error" "$LOG/demo.log" | head -5
GPU_CHECK_STEP_S=120 timeout 125 python3 scripts/gpu_check.py backends >"$LOG/backends.log" 2>&1
echo "backends rc=$?"; cat "$LOG/backends.log"
timeout 60 python3 scripts/gpu_check.py gpu-tests >"$LOG/gpu-tests.log" 2>&1
echo "gpu-tests rc=$?"; grep -E "^(PASS|FAIL) " "$LOG/gpu-tests.log"; grep -E "^FAILED|Error" "$LOG/gpu-tests.log" | head -5
