"""What a run is told: the server's URL, its key, the claims, the waits and the selection."""

from __future__ import annotations

from dataclasses import dataclass, replace

from conformance.server.engine_state import EngineState
from conformance.server.features import KNOWN_FEATURES, Features
from conformance.wire import DEFAULT_TIMEOUT_S, Client, Timeouts
from conformance.wire.exchange import conceal
from loopback.timeouts import PROBE_SHARE, WARMUP_TIMEOUT_S


@dataclass(frozen=True)
class SuiteConfig:
    base_url: str
    api_key: str | None = None
    expect: frozenset[str] = frozenset()
    timeout: float = DEFAULT_TIMEOUT_S  # per request (`wire.Timeouts.request`)
    stream_deadline: float = 0.0  # per stream, wall clock; 0: from `timeout` (`Timeouts.stream`)
    deadline_s: float = 0.0  # whole run, wall clock; 0: from `timeout` (`Timeouts.run`)
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
        if not self.deadline_s:
            object.__setattr__(self, "deadline_s", Timeouts(self.timeout).run)
        unknown = sorted(self.expect - set(KNOWN_FEATURES))
        if unknown:
            raise ValueError(
                f"unknown feature(s) in --expect: {', '.join(unknown)} "
                f"(known: {', '.join(KNOWN_FEATURES)})"
            )

    @property
    def probe_s(self) -> float:
        """What of the run's wall clock its probe pass may spend (`PROBE_SHARE`)."""
        return PROBE_SHARE * self.deadline_s


def client_for(config: SuiteConfig, url: str | None = None, ends: float | None = None) -> Client:
    """A client of the server (or of one engine behind it, at `url`) as the run is configured;
    `ends`: the run's deadline, every exchange of the client ends by it."""
    client = Client(url or config.base_url, config.api_key, config.timeout, config.stream_deadline)
    client.ends = ends
    return client


def engine_state(config: SuiteConfig, ends: float | None = None) -> EngineState:
    """Every engine's state read at its own URL (the server's own, given no engines), through
    clients of its own: these reads are no check's exchanges."""
    urls = config.engines or (config.base_url,)
    return EngineState([client_for(config, url, ends) for url in urls])


def with_topology(config: SuiteConfig, features: Features, ends: float | None = None) -> Features:
    """The probed features plus what the run knows of its topology: the engines behind the
    server, and whether their state can be read (`engine-state`)."""
    state = engine_state(config, ends)
    try:
        readable = state.read() is not None
    finally:
        state.close()
    return replace(features, engines=config.engines, engine_state=readable)
