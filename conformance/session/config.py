"""What a run is told: the server's URL, its key, the claims, the waits and the selection."""

from __future__ import annotations

from dataclasses import dataclass, replace

from conformance.server.engine_state import EngineState
from conformance.server.features import KNOWN_FEATURES, Features
from conformance.wire import DEFAULT_TIMEOUT_S, Client, Timeouts
from conformance.wire.exchange import conceal
from loopback.timeouts import RUN_DEADLINE_S, WARMUP_TIMEOUT_S


@dataclass(frozen=True)
class SuiteConfig:
    base_url: str
    api_key: str | None = None
    expect: frozenset[str] = frozenset()
    timeout: float = DEFAULT_TIMEOUT_S  # per request (`wire.Timeouts.request`)
    stream_deadline: float = 0.0  # per stream, wall clock; 0: from `timeout` (`Timeouts.stream`)
    deadline_s: float = RUN_DEADLINE_S  # whole run
    warmup_timeout: float = WARMUP_TIMEOUT_S  # the first generate (a real server's is slow)
    profile: str | None = None
    requirement_ids: frozenset[str] | None = None  # run only the checks of these
    keyword: str | None = None  # pytest -k
    workers: int | None = None  # check modules run at once; None: from the server's pace
    engines: tuple[str, ...] = ()  # the engines behind base_url (a router), read directly

    def __post_init__(self) -> None:
        conceal(self.api_key)  # kept out of every output from the start (`wire.exchange`)
        if not self.stream_deadline:  # the kit's one timeout configuration, from one number
            object.__setattr__(self, "stream_deadline", Timeouts(self.timeout).stream)
        unknown = sorted(self.expect - set(KNOWN_FEATURES))
        if unknown:
            raise ValueError(
                f"unknown feature(s) in --expect: {', '.join(unknown)} "
                f"(known: {', '.join(KNOWN_FEATURES)})"
            )


def client_for(config: SuiteConfig, url: str | None = None) -> Client:
    """A client of the server (or of one engine behind it, at `url`) as the run is configured."""
    return Client(url or config.base_url, config.api_key, config.timeout, config.stream_deadline)


def engine_state(config: SuiteConfig) -> EngineState:
    """Every engine's state read at its own URL (the server's own, given no engines), through
    clients of its own: these reads are no check's exchanges."""
    return EngineState([client_for(config, url) for url in config.engines or (config.base_url,)])


def with_topology(config: SuiteConfig, features: Features) -> Features:
    """The probed features plus what the run knows of its topology: the engines behind the
    server, and whether their state can be read (`engine-state`)."""
    state = engine_state(config)
    try:
        readable = state.read() is not None
    finally:
        state.close()
    return replace(features, engines=config.engines, engine_state=readable)
