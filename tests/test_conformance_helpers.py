"""Shared helpers (no tests here) for the suite's own tests: run the suite against the mock."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace

from conformance.run.embedded import QUICK, embedded_mock
from conformance.run.runner import run
from conformance.server.process import ServerProcess
from conformance.session import SuiteConfig
from conformance.verdicts.results import Report


@contextmanager
def mock(profile: str, defects: Iterable[str] = ()) -> Iterator[tuple[ServerProcess, SuiteConfig]]:
    with embedded_mock(profile, defects=list(defects), **QUICK) as started:
        yield started


def run_against_mock(
    profile: str, defects: Iterable[str] = (), requirement_ids: Iterable[str] | None = None
) -> Report:
    with mock(profile, defects) as (_, config):
        wanted = frozenset(requirement_ids) if requirement_ids is not None else None
        return run(replace(config, requirement_ids=wanted))
