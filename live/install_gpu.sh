#!/usr/bin/env bash
# Install vllm for a GPU runner: VLLM_VERSION pins it, unset means the newest release.
# pip where the environment has it (it reads the runner's pip settings); under tox-uv, uv.
set -euo pipefail
PY=${1:?usage: install_gpu.sh PYTHON}
SPEC="vllm${VLLM_VERSION:+==$VLLM_VERSION}"
if "$PY" -m pip --version >/dev/null 2>&1; then
  "$PY" -m pip install -q "$SPEC"
else
  source "$(dirname "$0")/uv.sh"
  "${UV[@]}" pip install -q --python "$PY" "$SPEC"
fi
