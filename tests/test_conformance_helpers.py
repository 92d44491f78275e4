"""Shared helpers (no tests here) for the suite's own tests: run the suite against the mock."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace

from conformance.profiles import MOCK_KNOBS, PROFILES
from conformance.results import Report
from conformance.runner import run
from conformance.server_process import ServerProcess, free_port, mock_argv
from conformance.session import SuiteConfig


@contextmanager
def mock(profile: str, defects: Iterable[str] = ()) -> Iterator[tuple[ServerProcess, SuiteConfig]]:
    p = PROFILES[profile]
    port = free_port()
    argv = mock_argv(port, [*p.flags, *MOCK_KNOBS], list(defects))
    with ServerProcess(argv, port, env=dict(p.env)) as server:
        config = SuiteConfig(
            base_url=server.base_url,
            api_key=p.api_key,
            expect=p.claims,
            profile=profile,
            timeout=3.0,
            warmup_timeout=3.0,
            deadline_s=120.0,
        )
        yield server, config


def run_against_mock(
    profile: str, defects: Iterable[str] = (), requirement_ids: Iterable[str] | None = None
) -> Report:
    with mock(profile, defects) as (_, config):
        wanted = frozenset(requirement_ids) if requirement_ids is not None else None
        return run(replace(config, requirement_ids=wanted))
