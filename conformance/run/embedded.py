"""The embedded mock: the kit's own stand-in, started as a process in one profile.

One place knows how a profile's mock is started (its flags, the mock's knobs, its environment)
and which suite configuration goes with it; the CLI's default run, the kit's tests and the
benchmarks all start it here. (A process, not an import: `conformance` never imports the mock.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from conformance.profiles import MOCK_KNOBS, PROFILES
from conformance.server.process import ServerProcess, mock_argv, start_on_a_free_port
from conformance.session import SuiteConfig

QUICK = {"timeout": 6.0, "warmup_timeout": 6.0, "deadline_s": 300.0}
"""Bounds for the kit's own tests and benchmarks: the mock answers in milliseconds, so a
defect that hangs costs seconds, not minutes; loose enough for a machine whose cores are busy."""


@contextmanager
def embedded_mock(
    profile: str, flags: Sequence[str] = (), defects: Sequence[str] = (), **config: Any
) -> Iterator[tuple[ServerProcess, SuiteConfig]]:
    """The mock of `profile` (plus `flags`, `defects`) running, and the configuration to test
    it with: its base URL, key and claims, and `config`'s other fields."""
    p = PROFILES[profile]

    def server_for(port: int) -> ServerProcess:
        argv = mock_argv(port, [*p.flags, *MOCK_KNOBS, *flags], list(defects))
        return ServerProcess(argv, port, env=dict(p.env))

    with start_on_a_free_port(server_for) as server:
        yield (
            server,
            SuiteConfig(
                base_url=server.base_url,
                api_key=p.api_key,
                expect=p.claims | config.pop("expect", frozenset()),
                profile=profile,
                **config,
            ),
        )
