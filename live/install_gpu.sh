#!/usr/bin/env bash
# Install vllm for a GPU runner: VLLM_VERSION pins it, unset means the newest release.
set -euo pipefail
PY=${1:?usage: install_gpu.sh PYTHON}
"$PY" -m pip install -q "vllm${VLLM_VERSION:+==$VLLM_VERSION}"
