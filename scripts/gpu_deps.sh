# Sourced by scripts/gpu-check.sh: install_missing, the deps step.
# Rules: the wanted requirements are what scripts/gpu_deps.py lists for DEPS (missing, or
# installed older than a requirement on them); they are installed into SITE (first on
# PYTHONPATH, nothing in the image changes) from WHEELS offline when that folder exists,
# else from the package index (the lent machine reaches it); each round installs with
# --no-deps and --upgrade (DEPS already lists the whole closure, and torch is never pulled
# in), then the list is computed again: a new version may want a newer requirement, so up
# to three rounds; anything still wanted after them is a FAIL naming it. The last line
# says where the packages came from.
install_missing() {
  local wanted round from
  for round in 1 2 3; do
    # shellcheck disable=SC2086  # DEPS is a space-separated list of pairs
    wanted=$("$PY" scripts/gpu_deps.py $DEPS) || { echo "could not read the dependencies"; return 1; }
    wanted=$(echo $wanted)
    if [ -z "$wanted" ]; then
      [ "$round" = 1 ] && { echo "nothing missing"; return 0; }
      echo "installed from $from into $SITE"; return 0
    fi
    if [ -n "${WHEELS:-}" ] && [ -d "$WHEELS" ]; then
      from="the wheelhouse $WHEELS (offline)"
      echo "round $round: missing or outdated: $wanted: installing from $from"
      # shellcheck disable=SC2086
      "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --find-links "$WHEELS" --target "$SITE" $wanted || return 1
    else
      from="the package index (no wheelhouse)"
      echo "round $round: missing or outdated: $wanted: installing from $from"
      # shellcheck disable=SC2086
      "$PY" -m pip install -q --no-deps --no-compile --upgrade --target "$SITE" $wanted || return 1
    fi
  done
  echo "still missing or outdated after three rounds: $wanted"
  return 1
}
