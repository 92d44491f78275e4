"""What every check reads, in four parts: the server's facts (what the probe learned), the
client, the memo of shared exchanges and the observations kept for the rules judged over
every answer. Deciding whether a check may judge is the grounds room's (`conformance.grounds`),
never the session's."""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from conformance.server.engine_state import EngineState
from conformance.server.features import Features, probe
from conformance.server.limits import Limits, probe_limits
from conformance.session.config import SuiteConfig, client_for, engine_state, with_topology
from conformance.session.memo import Memo
from conformance.session.observations import MEDIA, MISSTATED, Observations
from conformance.tito.answers import Answer
from conformance.wire import Client
from conformance.wire.exchange import Exchange

__all__ = [
    "MEDIA",
    "MISSTATED",
    "ServerFacts",
    "Session",
    "SuiteConfig",
    "client_for",
    "engine_state",
    "with_topology",
]

T = TypeVar("T")


@dataclass(frozen=True)
class ServerFacts:
    """What the probe learned of the server: its features and its configuration's limits."""

    features: Features
    limits: Limits = field(default_factory=Limits)


class Session:
    """One run against one server: its facts, its client, the memo and the observations."""

    def __init__(
        self,
        config: SuiteConfig,
        client: Client,
        features: Features,
        limits: Limits | None = None,
        ends: float | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.facts = ServerFacts(features, limits or Limits())
        self.seen = Observations()
        self.memo = Memo(client, self.seen.recent)
        self.started = time.monotonic()
        self.ends = self.started + config.deadline_s if ends is None else ends
        """The run's deadline (`time.monotonic()`): its probe's, its checks' and every client's
        it makes; a check worker's session has the runner's."""
        client.ends = self.ends
        self.session_id = secrets.token_hex(4)
        self.selected: frozenset[str] | None = None  # the requirements this run decides
        self.failing: set[str] = set()  # requirement IDs a check failed so far
        self._counter = itertools.count()
        self._state: EngineState | None = None
        self._direct: dict[str, Client] = {}
        client.on_misstated = self.misstated

    @classmethod
    def open(cls, config: SuiteConfig, ends: float | None = None) -> Session:
        """Probe the server and open the run's session. `ends`: the run's deadline (default:
        `config.deadline_s` from now); the probe pass spends at most `config.probe_s` of it,
        however many of its requests wait their whole timeout."""
        ends = time.monotonic() + config.deadline_s if ends is None else ends
        client = client_for(config, ends=ends)
        probed: list[tuple[Exchange, int]] = []  # the probe's own answers are judged too
        client.on_misstated = lambda exchange, code: probed.append((exchange, code))
        budget = min(config.probe_s, ends - time.monotonic())
        try:
            with client.budget(budget, f"the probe's budget of {budget:.0f} s"):
                warmup = max(config.timeout, config.warmup_timeout)
                features = probe(client, warmup_timeout=warmup)
                enabled = features.generate == "enabled"
                limits = probe_limits(client, features.model) if enabled else Limits()
                features = with_topology(config, features, ends)
        except BaseException:
            client.close()
            raise
        client.log.clear()
        client.bound_for = limits.body_bound
        session = cls(config, client, features, limits, ends)
        for exchange, code in probed:
            session.misstated(exchange, code)
        return session

    @classmethod
    def learned(
        cls, config: SuiteConfig, features: Features, limits: Limits, ends: float | None = None
    ) -> Session:
        """A session that knows what another session's probe learned (a worker's: no second
        probe, and the runner's deadline), with a client and request ids of its own."""
        client = client_for(config, ends=ends)
        client.bound_for = limits.body_bound
        return cls(config, client, features, limits, ends)

    def close(self) -> None:
        self.client.close()
        if self._state is not None:
            self._state.close()
        for client in self._direct.values():
            client.close()

    # The facts, read everywhere.
    @property
    def features(self) -> Features:
        return self.facts.features

    @property
    def limits(self) -> Limits:
        return self.facts.limits

    # The observations, as the checks and the client record them.
    @property
    def observed(self) -> dict[str, list[tuple[str, Any]]]:
        return self.seen.observed

    @property
    def recent(self) -> list[tuple[str, str, Any]]:
        return self.seen.recent

    @property
    def malformed(self) -> list[tuple[str, str, Any]]:
        return self.seen.malformed

    @property
    def answers(self) -> list[Answer]:
        return self.seen.answers

    def observe(self, schema: str, what: str, body: Any) -> None:
        self.seen.observe(schema, what, body)

    def observe_media(self, schema: str, what: str, media: str) -> None:
        self.seen.observe_media(schema, what, media)

    def keep(self, answer: Answer | None) -> None:
        self.seen.keep(answer)

    def judged(self, schema: str) -> list[tuple[str, Any]]:
        return self.seen.judged(schema)

    def misstated(self, exchange: Exchange, code: int) -> None:
        what = f"{exchange.method} {exchange.url.removeprefix(self.config.base_url)}"
        self.seen.misstated(what, exchange.status, code)

    # The memo.
    def remember(self, key: str, factory: Callable[[], T]) -> T:
        """`memo.once`: compute a shared exchange once per run."""
        return self.memo.once(key, factory)

    def known(self, key: str) -> Any:
        return self.memo.known(key)

    # The client, and clients of the engines behind it.
    def direct(self, url: str) -> Client:
        """A client of one engine behind the router (`--engine`), reached at its own URL: what
        the engine itself answers, to tell the router's doing from the engine's."""
        if url not in self._direct:
            self._direct[url] = client_for(self.config, url, self.ends)
        return self._direct[url]

    @property
    def state(self) -> EngineState:
        """The engines' state (`engine_state`), its clients made once per session."""
        if self._state is None:
            self._state = engine_state(self.config, self.ends)
        return self._state

    def rid(self, tag: str) -> str:
        """A request id unique to this run, so runs against one server never collide."""
        return f"tito-{self.session_id}-{next(self._counter)}-{tag}"

    def timeout_for(self, tokens: int) -> float:
        """A per-request bound that scales with the server's pace, never below the config's."""
        return max(self.config.timeout, 4 * self.limits.seconds_for(tokens) + 5)

    @property
    def overdue(self) -> bool:
        return time.monotonic() > self.ends
