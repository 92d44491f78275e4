# Sourced by the install scripts: sets UV to a command that runs uv for the interpreter $PY.
# tox installs uv into the live environments (deps = uv), under plain tox and tox-uv alike;
# run by hand, the script brings uv itself. tox-uv's environments have no pip, so pip is
# bootstrapped with ensurepip only where uv is missing.
if "$PY" -m uv --version >/dev/null 2>&1; then
  UV=("$PY" -m uv)
elif command -v uv >/dev/null 2>&1; then
  UV=(uv)
else
  "$PY" -m pip --version >/dev/null 2>&1 || "$PY" -m ensurepip >/dev/null
  "$PY" -m pip install -q uv
  UV=("$PY" -m uv)
fi
