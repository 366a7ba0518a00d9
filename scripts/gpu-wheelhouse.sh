#!/usr/bin/env bash
# Build the wheels scripts/gpu-check.sh installs, offline, on a bare CUDA-torch machine:
# what aitune_fp, its CLI, the ONNX exporter and the `gpu` tests import beyond torch
# (returns, pyrsistent, cloudpickle, msgspec, onnx, onnxscript, onnx_ir, ml_dtypes, numpy, rich,
# pytest, hypothesis, ... and their own requirements), for one target Python, into one
# folder. torch, onnxruntime and what a CUDA torch install already brings (sympy, jinja2,
# networkx, fsspec, filelock, triton, the nvidia-* libraries) are left out. The folder must
# stay under LIMIT_MIB (default 64: what a lent GPU machine's working tree may carry); the
# script prints its size and fails when it is over.
#
#   bash scripts/gpu-wheelhouse.sh [PYTHON_VERSION [FOLDER]]   # default 3.12 wheelhouse
#
# Environment: PIP (default "python3 -m pip"), PLATFORMS (manylinux tags, x86_64),
# CONSTRAINTS (a pip constraints file), else PIN_FROM (a python whose installed versions
# pin the wheels, default this checkout's .venv/bin/python when there is one, so the GPU
# machine runs what the tests ran here). Needs network.
set -euo pipefail
cd "$(dirname "$0")/.."
PYV="${1:-3.12}"
DEST="${2:-wheelhouse}"
LIMIT_MIB="${LIMIT_MIB:-64}"
PIP="${PIP:-python3 -m pip}"
PIN_FROM="${PIN_FROM:-.venv/bin/python}"
PLATFORMS="${PLATFORMS:-manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64}"
WANTED=(returns pyrsistent cloudpickle msgspec typing_extensions onnx onnxscript onnx_ir ml_dtypes
  numpy protobuf packaging rich pytest hypothesis)
LEFT_OUT='^(torch|onnxruntime|onnxruntime_gpu|sympy|mpmath|networkx|jinja2|markupsafe|fsspec|filelock|setuptools|triton|nvidia_.*)$'

constraints=()
if [ -n "${CONSTRAINTS:-}" ]; then constraints=(-c "$CONSTRAINTS")
elif [ -x "$PIN_FROM" ]; then
  pins=$(mktemp); trap 'rm -f "$pins"' EXIT
  "$PIN_FROM" -m pip list --format=freeze 2>/dev/null \
    | grep -iE "^($(IFS='|'; echo "${WANTED[*]}" | sed 's/_/[-_]/g'))==" >"$pins" || true
  [ -s "$pins" ] && constraints=(-c "$pins") && echo "pinned to this checkout's versions: $(tr '\n' ' ' <"$pins")"
fi
platform_args=()
for p in $PLATFORMS; do platform_args+=(--platform "$p"); done

rm -rf "$DEST"
mkdir -p "$DEST"
$PIP download -q --only-binary=:all: --python-version "$PYV" --implementation cp \
  "${platform_args[@]}" "${constraints[@]}" -d "$DEST" "${WANTED[@]}" 2>&1 \
  | { grep -v "is ignored: it is neither a file nor a directory" || true; }
for f in "$DEST"/*.whl; do
  name=$(basename "$f"); name=${name%%-*}; name=$(echo "$name" | tr 'A-Z.-' 'a-z__')
  if [[ "$name" =~ $LEFT_OUT ]]; then rm -f "$f"; fi
done
ls -1 "$DEST"
bytes=$(du -sb "$DEST" | cut -f1)
mib=$(( (bytes + 1048575) / 1048576 ))
echo "wheelhouse $DEST for Python $PYV: $(ls "$DEST" | wc -l) wheels, ${mib} MiB (limit ${LIMIT_MIB} MiB)"
if [ "$mib" -gt "$LIMIT_MIB" ]; then
  echo "over the ${LIMIT_MIB} MiB limit" >&2
  exit 1
fi
