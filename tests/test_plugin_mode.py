"""`pytest --tito-base-url URL`, the suite as a pytest plugin: the same verdict as the CLI, with
the suite's table at the end, and nothing pytest has deprecated (a session fixture bound to an
instance is an error in pytest 10: run here with that warning as an error)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conformance.run.embedded import QUICK, embedded_mock


def test_plugin_mode_passes_a_correct_mock(tmp_path: Path) -> None:
    with embedded_mock("tokens-only", **QUICK) as (_, config):
        argv = [sys.executable, "-m", "pytest", "--tito-base-url", config.base_url, "-q"]
        argv += ["-p", "no:cacheprovider", "-W", "error::pytest.PytestRemovedIn10Warning"]
        argv += ["--tito-expect", ",".join(sorted(config.expect))]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=str(tmp_path), timeout=300)
    tail = done.stdout[-2000:] + done.stderr[-1000:]
    assert done.returncode == 0, tail
    assert "PASSED:" in done.stdout and " 0 failed" in done.stdout and " 0 errors" in done.stdout
    assert "Warning" not in done.stdout, tail
