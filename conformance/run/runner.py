"""One run of the suite against one server: probe, run the checks in-process, build the report."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from conformance.registry import all_checks
from conformance.reporting.progress import Progress
from conformance.run import parallel
from conformance.run.collector import Collector
from conformance.server.features import Features, ProbeError
from conformance.server.limits import Limits
from conformance.session import Session, SuiteConfig
from conformance.verdicts.assemble import SUITE_NAME, build, report_from
from conformance.verdicts.attribution import attribute
from conformance.verdicts.results import CheckResult, Report

CHECKS_DIR = Path(__file__).parents[1] / "checks"


def pytest_args(config: SuiteConfig, paths: list[Path] | list[str] | None = None) -> list[str]:
    """The inner pytest command line: only our checks (`paths`: these modules of them), none
    of the host project's settings."""
    checks = str(CHECKS_DIR)
    args = [
        *(str(p) for p in paths or [CHECKS_DIR]),
        "-q",
        # Only the kit's own plugins, in process and in every check worker (`parallel`): an
        # installed one (hypothesis, schemathesis, a host's pytest-randomly) has no business
        # among the checks, and importing them all took most of a worker's start.
        "--disable-plugin-autoload",
        "-p",
        "no:cacheprovider",
        # Plugins for a project's own tests, idle for the checks (they read no logs or stray
        # exceptions) but not free: unraisableexception's teardown alone collects garbage
        # twice per session, a tenth of a suite run's CPU in a large process. `warnings`
        # stays: it keeps the checks' own warnings out of a host pytest session.
        *("-p", "no:unraisableexception", "-p", "no:threadexception", "-p", "no:logging"),
        *("-p", "no:doctest", "-p", "no:junitxml", "-p", "no:pastebin"),
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


class Beside(Protocol):
    """Work against the same server that needs only the probe's knowledge (the CLI's small
    fuzz), run beside the check workers when the server has room for it. It is handed an event
    set once the module judging the weight label has ended (`parallel.GATED`): it leaves the
    label alone until then. It ends before the checks that read the whole server start."""

    def __call__(self, features: Features, limits: Limits, gate: threading.Event) -> None: ...

    def fold(self, report: Report) -> Report:
        """`report` with the work's own results folded in (run now if it did not run beside)."""
        ...


def run(config: SuiteConfig, beside: Beside | None = None) -> Report:
    """Run every applicable check against `config.base_url`, `beside`'s work folded in, and
    behind a router every failure attributed: the one place that reruns the suite per engine
    (`attribution`), once for the checks' and the folded-in work's failures alike. Never
    raises for server faults."""
    report = _checked(config, beside)
    if beside is not None:
        report = beside.fold(report)
    return attribute(config, report, run)


def _checked(config: SuiteConfig, beside: Beside | None) -> Report:
    """The checks' report. `beside` is called (once, in a thread) only if it ran beside the
    checks: its `fold` runs it afterwards otherwise."""
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    try:
        session = Session.open(config, ends=t0 + config.deadline_s)
    except ProbeError as exc:
        return build(config, None, started_at, t0, [], harness_error=str(exc))
    workers = parallel.workers_for(config, session.limits)
    outcomes: list[tuple[tuple[str, ...], CheckResult]] = []
    errors: list[str] = []
    paths: list[str] | None = None
    selection: frozenset[str] | None = None
    try:
        if workers > 1:  # a slow server: the independent checks side by side first
            shared, alone = parallel.modules(CHECKS_DIR)
            paths = parallel.afterwards(alone)
            selection = frozenset(rid for ids in all_checks().values() for rid in ids)
            jobs = [pytest_args(config, targets) for targets in parallel.jobs(shared, alone)]
            side = beside if parallel.room_beside(workers, session.limits) else None
            progress = progress_plugin(config)
            progress.update(
                f"{len(jobs)} check groups, {workers} at a time"
                + (", fuzzing beside" if side else "")
            )
            try:
                with _beside(side, session) as gate:
                    shards = parallel.run_workers(
                        session, workers, jobs, selection, on_done=_opens(gate)
                    )
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


@contextmanager
def _beside(beside: Beside | None, session: Session) -> Iterator[threading.Event]:
    """`beside` in a thread for the block's length; its gate is open when the block ends, and
    it has ended when the block has."""
    gate = threading.Event()
    if beside is None:
        yield gate
        return
    thread = threading.Thread(
        target=beside, args=(session.features, session.limits, gate), daemon=True
    )
    thread.start()
    try:
        yield gate
    finally:
        gate.set()
        thread.join()


def _opens(gate: threading.Event) -> Callable[[list[str]], None]:
    """Open `gate` when the job running the gated module ends."""

    def on_done(job: list[str]) -> None:
        if any(Path(arg.split("::")[0]).name == parallel.GATED for arg in job):
            gate.set()

    return on_done


def progress_plugin(config: SuiteConfig) -> Progress:
    """The check group running, on a terminal (see reporting.progress)."""
    return Progress(f"   [{config.profile or config.base_url}] checks: ")


__all__ = ["SUITE_NAME", "Beside", "progress_plugin", "pytest_args", "report_from", "run"]
