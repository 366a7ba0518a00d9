#!/usr/bin/env bash
# The whole test suite: lint, types, layer contracts, then pytest (doctests included).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not heavy"` to skip the
# heavy end-to-end cases locally.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff";          ruff check aitune_fp tests benchmarks
echo "== mypy --strict"; mypy
echo "== import-linter"; lint-imports
SEED="${HYPOTHESIS_SEED:-$(python -c 'import secrets; print(secrets.randbelow(2**31))')}"
echo "== pytest (hypothesis profile ${HYPOTHESIS_PROFILE:=ci}, seed $SEED; rerun with HYPOTHESIS_SEED=$SEED)"
export HYPOTHESIS_PROFILE
python -m pytest --hypothesis-seed="$SEED" "$@"
