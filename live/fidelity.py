"""The fidelity gate inside a live run: the mock, same flags, diffed against the real server.

Runs `tito-conformance diff --reference REAL --candidate MOCK` (the suite's own diff, as a
subprocess: live composes, it does not re-implement) while the real server of a profile is up.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .launcher import LiveServer, ServerStartError, free_port
from .profiles import Backend, LiveProfile

# The tiny model's vocabulary, so the mock answers the same ids in and out of range.
MOCK_KNOBS = ("--mock-itl-ms", "1", "--mock-vocab-size", "2048")


@dataclass
class DiffResult:
    profile: str
    status: str  # "same" | "different" | "error"
    returncode: int | None
    output_path: Path

    @property
    def ok(self) -> bool:
        return self.status == "same"


def diff_against_mock(
    real: LiveServer, profile: LiveProfile, out: Path, timeout_s: float = 900.0
) -> DiffResult:
    mock = Backend("mock", "tiny-qwen3", sys.executable, extra_args=MOCK_KNOBS)
    port = free_port()
    path = out / f"diff-{profile.name}.txt"
    candidate = LiveServer(
        mock.argv(profile, port),
        port,
        env=mock.env(profile),
        start_deadline_s=30.0,
        api_key=profile.api_key,
        log_path=out / f"mock-{profile.name}.log",
    )
    argv = [
        sys.executable, "-m", "conformance.cli", "diff",
        "--reference", real.base_url, "--candidate", candidate.base_url,
        "--profile", profile.name,
    ]  # fmt: skip
    if profile.api_key:
        argv += ["--api-key", profile.api_key]
    try:
        with candidate:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except ServerStartError as exc:
        path.write_text(f"mock did not start: {exc}\n", encoding="utf-8")
        return DiffResult(profile.name, "error", None, path)
    except subprocess.TimeoutExpired:
        path.write_text(f"diff did not finish within {timeout_s:g} s\n", encoding="utf-8")
        return DiffResult(profile.name, "error", None, path)
    path.write_text(f"$ {' '.join(argv)}\n{done.stdout}{done.stderr}", encoding="utf-8")
    if done.returncode == 0:
        status = "same"
    elif done.returncode == 1:
        status = "different"
    else:
        status = "error"
    return DiffResult(profile.name, status, done.returncode, path)
