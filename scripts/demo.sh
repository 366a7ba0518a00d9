#!/usr/bin/env bash
# The main job: tune every embedded demo model on CPU with every CPU backend.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh
exec .venv/bin/aitune-fp demo --model all --out "${OUT:-runs/demo}" "$@"
