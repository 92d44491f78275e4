"""One run of the suite against one server: probe, run the checks in-process, build the report."""

from __future__ import annotations

import contextlib
import io
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from .assemble import SUITE_NAME, build, report_from
from .collector import Collector
from .features import ProbeError
from .reporting.progress import Progress
from .results import Report
from .session import Session, SuiteConfig

CHECKS_DIR = Path(__file__).parent / "checks"


def pytest_args(config: SuiteConfig) -> list[str]:
    """The inner pytest command line: only our checks, none of the host project's settings."""
    checks = str(CHECKS_DIR)
    args = [
        checks,
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        checks,
        "--confcutdir",
        checks,
        "-o",
        "addopts=",
        "-o",
        "python_files=test_*.py",
        "-o",
        "python_functions=test_*",
        "-o",
        "console_output_style=classic",
    ]
    if config.keyword:
        args += ["-k", config.keyword]
    return args


def run(config: SuiteConfig) -> Report:
    """Run every applicable check against `config.base_url`. Never raises for server faults."""
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    try:
        session = Session.open(config)
    except ProbeError as exc:
        return build(config, None, started_at, t0, [], harness_error=str(exc))
    collector = Collector(config, session)
    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            code = pytest.main(pytest_args(config), plugins=[collector, progress_plugin(config)])
    finally:
        session.close()
    error = ""
    if code not in (
        pytest.ExitCode.OK,
        pytest.ExitCode.TESTS_FAILED,
        pytest.ExitCode.NO_TESTS_COLLECTED,
    ):
        error = f"pytest exited with {code!r}:\n{output.getvalue()[-3000:]}"
    return build(config, session, started_at, t0, collector.outcomes, harness_error=error)


def progress_plugin(config: SuiteConfig) -> Progress:
    """The check group running, on a terminal (see reporting.progress)."""
    return Progress(f"   [{config.profile or config.base_url}] checks: ")


__all__ = ["SUITE_NAME", "progress_plugin", "pytest_args", "report_from", "run"]
