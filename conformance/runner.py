"""One run of the suite against one server: probe, run the checks in-process, build the report."""

from __future__ import annotations

import contextlib
import io
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from . import __version__
from .collector import Collector
from .document import SPEC_VERSION
from .features import ProbeError
from .requirements import all_requirements
from .results import CheckResult, Report, ServerInfo, decide
from .session import Session, SuiteConfig

SUITE_NAME = "tito-conformance"
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
        return _report(config, None, started_at, t0, [], harness_error=str(exc))
    collector = Collector(config, session)
    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            code = pytest.main(pytest_args(config), plugins=[collector])
    finally:
        session.close()
    error = ""
    if code not in (
        pytest.ExitCode.OK,
        pytest.ExitCode.TESTS_FAILED,
        pytest.ExitCode.NO_TESTS_COLLECTED,
    ):
        error = f"pytest exited with {code!r}:\n{output.getvalue()[-3000:]}"
    return _report(config, session, started_at, t0, collector.outcomes, harness_error=error)


def report_from(
    config: SuiteConfig,
    session: Session | None,
    outcomes: list[tuple[tuple[str, ...], CheckResult]],
) -> Report:
    """A report for outcomes gathered elsewhere (the pytest plugin mode)."""
    started = session.started if session is not None else time.monotonic()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    return _report(config, session, started_at, started, outcomes)


def _report(
    config: SuiteConfig,
    session: Session | None,
    started_at: str,
    t0: float,
    outcomes: list[tuple[tuple[str, ...], CheckResult]],
    harness_error: str = "",
) -> Report:
    features = session.features if session is not None else None
    results = [
        decide(req, [check for ids, check in outcomes if req.id in ids])
        for req in all_requirements()
    ]
    if harness_error:
        for result in results:
            if not result.checks:
                result.reason = "not run: the harness could not test this server"
    return Report(
        suite_name=SUITE_NAME,
        suite_version=__version__,
        spec_version=SPEC_VERSION,
        server=ServerInfo(
            base_url=config.base_url,
            version=features.version if features else None,
            detected_features=features.names() if features else [],
            claimed_features=sorted(config.expect),
            profile=config.profile,
            limits=session.limits.as_dict() if session is not None else {},
            limits_text=session.limits.describe() if session is not None and features else "",
        ),
        started_at=started_at,
        duration_s=round(time.monotonic() - t0, 3),
        requirements=results,
        harness_error=harness_error,
    )
