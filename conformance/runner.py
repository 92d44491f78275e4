"""One run of the suite against one server: probe, run the checks in-process, build the report."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from . import parallel
from .assemble import SUITE_NAME, build, report_from
from .collector import Collector
from .features import ProbeError
from .registry import all_checks
from .reporting.progress import Progress
from .results import CheckResult, Report
from .session import Session, SuiteConfig

CHECKS_DIR = Path(__file__).parent / "checks"


def pytest_args(config: SuiteConfig, paths: list[Path] | list[str] | None = None) -> list[str]:
    """The inner pytest command line: only our checks (`paths`: these modules of them), none
    of the host project's settings."""
    checks = str(CHECKS_DIR)
    args = [
        *(str(p) for p in paths or [CHECKS_DIR]),
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
    workers = parallel.workers_for(config, session.limits)
    outcomes: list[tuple[tuple[str, ...], CheckResult]] = []
    errors: list[str] = []
    paths: list[Path] | None = None
    selection: frozenset[str] | None = None
    try:
        if workers > 1:  # a slow server: the independent modules side by side first
            shared, paths = parallel.modules(CHECKS_DIR)
            selection = frozenset(rid for ids in all_checks().values() for rid in ids)
            jobs = [pytest_args(config, targets) for targets in parallel.jobs(shared)]
            progress = progress_plugin(config)
            progress.update(f"{len(shared)} check modules, {workers} at a time")
            try:
                shards = parallel.run_workers(session, workers, jobs, selection)
            finally:
                progress.clear()
            found, error = parallel.merge(session, shards)
            outcomes += found
            errors.append(error)
        collector = Collector(config, session, selection=selection)
        plugins = [collector, progress_plugin(config)]
        errors.append(parallel.checks_session(pytest_args(config, paths), plugins))
        outcomes += collector.outcomes
    finally:
        session.close()
    error = "\n".join(e for e in errors if e)
    return build(config, session, started_at, t0, outcomes, harness_error=error)


def progress_plugin(config: SuiteConfig) -> Progress:
    """The check group running, on a terminal (see reporting.progress)."""
    return Progress(f"   [{config.profile or config.base_url}] checks: ")


__all__ = ["SUITE_NAME", "progress_plugin", "pytest_args", "report_from", "run"]
