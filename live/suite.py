"""One suite run against one launched server, with the watchdog beside the suite's Collector.

Mirrors `conformance.run.runner.run` (same pytest arguments, same Collector, same report), adding
the watchdog plugin so a server death is charged to one check and the server comes back.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conformance.run.collector import Collector
from conformance.run.runner import progress_plugin, pytest_args, report_from
from conformance.server.features import ProbeError
from conformance.session import Session, SuiteConfig
from conformance.verdicts.results import Report
from conformance.wire.exchange import Exchange

from .launcher import LiveServer
from .watchdog import Death, Watchdog, mark_deaths

BODY_LIMIT = 16_384


@dataclass
class LiveRun:
    profile: str
    report: Report
    deaths: list[Death] = field(default_factory=list)
    transcripts: list[tuple[str, tuple[str, ...], list[Exchange]]] = field(default_factory=list)
    duration_s: float = 0.0
    timings: dict[str, object] = field(default_factory=dict)


def run_suite(server: LiveServer, config: SuiteConfig) -> LiveRun:
    """Run every applicable check; never raises for server faults."""
    t0 = time.monotonic()
    profile = config.profile or "?"
    try:
        session = Session.open(config)
    except ProbeError as exc:
        report = report_from(config, None, [])
        report.harness_error = f"probe failed: {exc}; server log tail:\n{server.log_tail()}"
        return LiveRun(profile, report, duration_s=round(time.monotonic() - t0, 2))
    collector = Collector(config, session)
    watchdog = Watchdog(server, session)
    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            code = pytest.main(
                pytest_args(config), plugins=[collector, watchdog, progress_plugin(config)]
            )
    finally:
        session.close()
    mark_deaths(collector.outcomes, watchdog.culprits())
    report = report_from(config, session, collector.outcomes)
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        report.harness_error = f"pytest exited with {code!r}:\n{output.getvalue()[-3000:]}"
    return LiveRun(
        profile,
        report,
        watchdog.deaths,
        watchdog.transcripts,
        round(time.monotonic() - t0, 2),
    )


def _text(body: bytes) -> str:
    text = body[:BODY_LIMIT].decode("utf-8", "replace")
    return text + ("...[cut]" if len(body) > BODY_LIMIT else "")


def write_transcripts(run: LiveRun, path: Path) -> None:
    """One JSON line per exchange, API key redacted, bodies cut at 16 KiB."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for check, ids, exchanges in run.transcripts:
            for x in exchanges:
                headers = {
                    k: ("Bearer <redacted>" if k.lower() == "authorization" else v)
                    for k, v in x.headers.items()
                }
                record = {
                    "profile": run.profile,
                    "check": check,
                    "requirements": list(ids),
                    "request": {
                        "method": x.method,
                        "url": x.url,
                        "headers": headers,
                        "body": None if x.body is None else _text(x.body),
                    },
                    "response": {
                        "status": x.status,
                        "headers": x.response_headers,
                        "body": _text(x.response_body),
                        "events": x.events[:200],
                        "error": x.error,
                    },
                }
                out.write(json.dumps(record) + "\n")
