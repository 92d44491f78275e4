"""Build the Report from a run's outcomes: the one place a report is assembled.

Both the runner (CLI mode) and the collector (pytest plugin mode) call it, so neither imports
the other.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from conformance import __version__
from conformance.document import SPEC_VERSION
from conformance.requirements import all_requirements
from conformance.session import Session, SuiteConfig
from conformance.verdicts.results import CheckResult, Report, ServerInfo, decide

SUITE_NAME = "tito-conformance"


def report_from(
    config: SuiteConfig,
    session: Session | None,
    outcomes: list[tuple[tuple[str, ...], CheckResult]],
) -> Report:
    """A report for outcomes gathered elsewhere (the pytest plugin mode)."""
    started = session.started if session is not None else time.monotonic()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    return build(config, session, started_at, started, outcomes)


def build(
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
            engines=list(config.engines),
        ),
        started_at=started_at,
        duration_s=round(time.monotonic() - t0, 3),
        requirements=results,
        harness_error=harness_error,
        learned=(session.features, session.limits) if session is not None else None,
    )
