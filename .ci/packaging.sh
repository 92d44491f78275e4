#!/usr/bin/env bash
# The kit as users get it: a wheel built from this tree, run with pipx (no checkout, no tox),
# and the composite action installing itself from scratch on a runner-like fresh venv.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=.ci-venv
[ -x "$tools/bin/pipx" ] || { python3 -m venv "$tools" && "$tools/bin/pip" install -q build pipx; }
rm -rf dist
"$tools/bin/python" -m build -q --wheel --outdir dist . >/dev/null
wheel=$(ls dist/tito_conformance_kit-*.whl)
export PIPX_HOME="$PWD/.ci-venv/pipx"
pipx=("$tools/bin/pipx" run --python "$(command -v python3)" --spec "$PWD/$wheel")
"${pipx[@]}" tito-conformance --version
"${pipx[@]}" tito-conformance run --profile scale-out --requirement GEN-001 --fuzz-examples 0 \
  --json-report .ci-venv/pipx-report.json
"$tools/bin/python" - "$wheel" <<'PY'
import json, sys, zipfile
report = json.load(open(".ci-venv/pipx-report.json"))
version = sys.argv[1].split("-")[1]
assert report["suite"]["version"] == version, (report["suite"], version)
print(f"pipx run from {sys.argv[1]}: report of kit {version}, document {report['suite']['document_sha256'][:12]}")
PY
# The action's steps with a fresh install, as on a runner (tests/test_action.py).
TITO_ACTION_FRESH_INSTALL=1 .tox/py/bin/python -m pytest -q -p no:cacheprovider \
  tests/test_action.py -k conforming
