#!/usr/bin/env bash
# Install vllm for a GPU runner: VLLM_VERSION pins it, unset means the newest release.
# pip where the environment has it (it reads the runner's pip settings); under tox-uv, uv.
# TITO_VLLM_STANDIN=1 (tox -e live-standin, CI without a GPU): install nothing, write the
# stand-in `vllm` (live/standin: the mock behind `vllm serve`) beside PYTHON instead, playing
# VLLM_VERSION when set; TITO_KIT_PYTHON (the kit's interpreter, when PYTHON is a release
# environment of `--vllm-version` that has no kit) writes it and runs it.
set -euo pipefail
PY=${1:?usage: install_gpu.sh PYTHON}
if [ "${TITO_VLLM_STANDIN:-}" = 1 ]; then
  "${TITO_KIT_PYTHON:-$PY}" -m live.standin.install "$(dirname "$PY")"
  exit 0
fi
if grep -qs "tito-conformance: vllm stand-in" "$(dirname "$PY")/vllm"; then
  echo "install_gpu.sh: $(dirname "$PY")/vllm is the stand-in, not vLLM; recreate this" \
    "environment (tox -r -e live)" >&2
  exit 1
fi
SPEC="vllm${VLLM_VERSION:+==$VLLM_VERSION}"
if "$PY" -m pip --version >/dev/null 2>&1; then
  "$PY" -m pip install -q "$SPEC"
else
  source "$(dirname "$0")/uv.sh"
  "${UV[@]}" pip install -q --python "$PY" "$SPEC"
fi
