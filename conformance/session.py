"""The state every check reads: configuration, the probed features, the client."""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn, TypeVar

import pytest

from conformance.registry import Needs
from conformance.server.engine_state import EngineState
from conformance.server.features import KNOWN_FEATURES, Features, probe
from conformance.server.limits import Limits, probe_limits
from conformance.tito.answers import KEPT, Answer
from conformance.wire import DEFAULT_TIMEOUT_S, Client, Timeouts
from conformance.wire.exchange import Exchange, remember
from loopback.timeouts import RUN_DEADLINE_S, WARMUP_TIMEOUT_S

T = TypeVar("T")
LIMIT_PREFIX = "limit:"  # a skip because of the server's configuration, not a missing feature
MEDIA = "media"  # `observe_media`'s key beside a schema's
MISSTATED = "misstated"  # `observed`'s key of the answers whose error code is not their status
BLOCKED_PREFIX = "blocked:"  # not judged: a requirement it builds on fails (named in the reason)


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
        remember(self.api_key)  # kept out of every output from the start (`wire.exchange`)
        if not self.stream_deadline:  # the kit's one timeout configuration, from one number
            object.__setattr__(self, "stream_deadline", Timeouts(self.timeout).stream)
        unknown = sorted(self.expect - set(KNOWN_FEATURES))
        if unknown:
            raise ValueError(
                f"unknown feature(s) in --expect: {', '.join(unknown)} "
                f"(known: {', '.join(KNOWN_FEATURES)})"
            )


def _client(config: SuiteConfig, url: str | None = None) -> Client:
    return Client(url or config.base_url, config.api_key, config.timeout, config.stream_deadline)


def engine_state(config: SuiteConfig) -> EngineState:
    """Every engine's state read at its own URL (the server's own, given no engines), through
    clients of its own: these reads are no check's exchanges."""
    return EngineState([_client(config, url) for url in config.engines or (config.base_url,)])


def with_topology(config: SuiteConfig, features: Features) -> Features:
    """The probed features plus what the run knows of its topology: the engines behind the
    server, and whether their state can be read (`engine-state`)."""
    state = engine_state(config)
    try:
        readable = state.read() is not None
    finally:
        state.close()
    return replace(features, engines=config.engines, engine_state=readable)


@dataclass
class Session:
    config: SuiteConfig
    client: Client
    features: Features
    limits: Limits = field(default_factory=Limits)
    started: float = field(default_factory=time.monotonic)
    session_id: str = field(default_factory=lambda: secrets.token_hex(4))
    _counter: itertools.count[int] = field(default_factory=itertools.count)
    _cache: dict[str, Any] = field(default_factory=dict)
    selected: frozenset[str] | None = None  # the requirements this run decides (None: all)
    # schema name -> (what, body): every body the checks received, for the SCHEMA-* checks
    observed: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    # what the running check received (schema, what, body): the collector reads it when the
    # check fails, to tell a malformed answer (SCHEMA-*'s) from the check's own requirement
    recent: list[tuple[str, str, Any]] = field(default_factory=list)
    malformed: list[tuple[str, str, Any]] = field(default_factory=list)
    failing: set[str] = field(default_factory=set)  # requirement IDs a check failed so far
    answers: list[Answer] = field(default_factory=list)  # `answers`: every generate answered
    _state: EngineState | None = None
    _direct: dict[str, Client] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.client.on_misstated = self.misstated

    @classmethod
    def open(cls, config: SuiteConfig) -> Session:
        client = _client(config)
        probed: list[tuple[Exchange, int]] = []  # the probe's own answers are judged too
        client.on_misstated = lambda exchange, code: probed.append((exchange, code))
        try:
            features = probe(client, warmup_timeout=max(config.timeout, config.warmup_timeout))
            limits = (
                probe_limits(client, features.model) if features.generate == "enabled" else Limits()
            )
            features = with_topology(config, features)
        except BaseException:
            client.close()
            raise
        client.log.clear()
        client.bound_for = limits.body_bound
        session = cls(config, client, features, limits)
        for exchange, code in probed:
            session.misstated(exchange, code)
        return session

    @classmethod
    def learned(cls, config: SuiteConfig, features: Features, limits: Limits) -> Session:
        """A session that knows what another session's probe learned (a worker's: no second
        probe), with a client and request ids of its own."""
        client = _client(config)
        client.bound_for = limits.body_bound
        return cls(config, client, features, limits)

    def close(self) -> None:
        self.client.close()
        if self._state is not None:
            self._state.close()
        for client in self._direct.values():
            client.close()

    def direct(self, url: str) -> Client:
        """A client of one engine behind the router (`--engine`), reached at its own URL: what
        the engine itself answers, to tell the router's doing from the engine's."""
        if url not in self._direct:
            self._direct[url] = _client(self.config, url)
        return self._direct[url]

    @property
    def state(self) -> EngineState:
        """The engines' state (`engine_state`), its clients made once per session."""
        if self._state is None:
            self._state = engine_state(self.config)
        return self._state

    def observe(self, schema: str, what: str, body: Any) -> None:
        """Keep a received body (bounded) for the requirement that judges whole bodies, and as
        what the running check read (`recent`)."""
        kept = self.observed.setdefault(schema, [])
        if len(kept) < 2000:
            kept.append((what, body))
        if len(self.recent) < 500:
            self.recent.append((schema, what, body))

    def misstated(self, exchange: Exchange, code: int) -> None:
        """Keep an answer whose body states error `code` under another HTTP status."""
        kept = self.observed.setdefault(MISSTATED, [])
        if len(kept) < 2000:
            what = f"{exchange.method} {exchange.url.removeprefix(self.config.base_url)}"
            kept.append((what, {"status": exchange.status, "code": code}))

    def keep(self, answer: Answer | None) -> None:
        """Keep a generate answer (of a generate schema) for the rules judged over every one."""
        if answer is not None and len(self.answers) < KEPT:
            self.answers.append(answer)

    def observe_media(self, schema: str, what: str, media: str) -> None:
        """Keep an answer of `schema` that came under another content type than the spec's
        (its body may still parse): the SCHEMA-* requirement of that schema says so."""
        kept = self.observed.setdefault(f"{schema} {MEDIA}", [])
        if len(kept) < 2000:
            kept.append((what, media))

    def judged(self, schema: str) -> list[tuple[str, Any]]:
        """Every body of `schema` to judge: those kept, and any a blocked check read."""
        kept = self.observed.get(schema, [])
        held = {id(body) for _, body in kept}
        extra = [(w, b) for sch, w, b in self.malformed if sch == schema and id(b) not in held]
        return kept + extra

    def rid(self, tag: str) -> str:
        """A request id unique to this run, so runs against one server never collide."""
        return f"tito-{self.session_id}-{next(self._counter)}-{tag}"

    def need(self, *names: str, deciding: tuple[str, ...] = ()) -> None:
        """Skip unless the server has these features. A claimed feature that is absent fails the
        requirement stating it (its anchor); a check `deciding` other requirements is blocked
        naming the anchor, so the report names the one thing to fix."""
        detected = set(self.features.names())
        claims = self.config.expect
        if self.features.generate == "broken":  # nothing can be detected; GEN-001 says why
            self.need_generate()
        root = self.features.generating_claim(claims)
        for name in names:
            if name in detected and name == "disabled" and root is not None:
                self._blocked(f"generate is gated although {root!r} was claimed", root, deciding)
            if name in detected:
                continue
            if name in claims:
                self._blocked(
                    f"claimed feature {name!r} (--expect) was not detected: "
                    f"{self.features.why_not(name)}",
                    name,
                    deciding,
                )
            pytest.skip(f"not applicable: {self.features.why_not(name)}")

    def _blocked(self, why: str, feature: str, deciding: tuple[str, ...]) -> NoReturn:
        """Fail where the feature's anchor is decided (or not in this run); block elsewhere."""
        anchor = self.features.anchor(feature, self.config.expect)
        selected = self.selected is None or anchor in self.selected
        if anchor is None or anchor in deciding or not deciding or not selected:
            pytest.fail(why)
        pytest.skip(f"{BLOCKED_PREFIX} {why} ({anchor})")

    def applies(self, needs: Needs, what: str, deciding: tuple[str, ...] = ()) -> None:
        """Skip (or fail, for a claimed feature) unless the server meets a check's needs."""
        features = [f for f in needs.features if f != "generate"]
        if "generate" in needs.features:
            self.need_generate(deciding=deciding)
        if features:
            self.need(*features, deciding=deciding)
        if needs.n is not None:
            self.need_n(needs.n, what)
        if needs.room is not None:
            self.need_room(needs.room, what)

    def need_n(self, n: int, why: str) -> None:
        """Skip, naming the limit, when the server's configuration cannot take `n` choices."""
        if self.limits.max_n is not None and self.limits.max_n < n:
            pytest.skip(
                f"{LIMIT_PREFIX} {why} needs n = {n}; the server takes at most n = "
                f"{self.limits.max_n} (max_num_seqs) [{self.limits.evidence.get('max_n', '')}]"
            )

    def need_logprobs(self, k: int, why: str) -> None:
        if self.limits.max_logprobs is not None and self.limits.max_logprobs < k:
            pytest.skip(
                f"{LIMIT_PREFIX} {why} needs logprobs = {k}; the server allows at most "
                f"{self.limits.max_logprobs} (max_logprobs)"
            )

    def need_room(self, tokens: int, why: str, prompt_len: int = 4) -> None:
        room = self.limits.room(prompt_len)
        if room is not None and room < tokens:
            pytest.skip(
                f"{LIMIT_PREFIX} {why} needs {tokens} output tokens after a {prompt_len}-token "
                f"prompt; the server's max_model_len is {self.limits.max_model_len}"
            )

    def timeout_for(self, tokens: int) -> float:
        """A per-request bound that scales with the server's pace, never below the config's."""
        return max(self.config.timeout, 4 * self.limits.seconds_for(tokens) + 5)

    def need_generate(self, judged_here: bool = False, deciding: tuple[str, ...] = ()) -> None:
        """Generate must work. A broken (hung, garbage) generate fails GEN-001 (`judged_here`);
        every other check it blocks says so, so the report names the one thing to fix."""
        if self.features.generate == "broken":
            why = f"generate does not work: {self.features.why_not('scale-out')}"
            if judged_here:
                pytest.fail(why)
            pytest.skip(f"{BLOCKED_PREFIX} {why} (GEN-001)")
        if self.features.generate != "enabled":
            self.need(
                self.features.generating_claim(self.config.expect) or "scale-out", deciding=deciding
            )

    def remember(self, key: str, factory: Callable[[], T]) -> T:
        """Compute a shared exchange once per run (several checks judge the same answer). A
        check served from the cache is shown the exchanges and bodies it stands on, as if it
        had received them itself."""
        if key not in self._cache:
            before, seen = len(self.client.log), len(self.recent)
            try:
                outcome: tuple[Any, BaseException | None] = (factory(), None)
            except (Exception, pytest.skip.Exception) as exc:  # every check sharing it sees it
                outcome = (None, exc)
            for sent in self.client.log[before:]:  # the innermost computation names it
                sent.shared = sent.shared or key
            self._cache[key] = (outcome, self.client.log[before:], self.recent[seen:])
        else:
            self.client.log.extend(self._cache[key][1])
            self.recent.extend(self._cache[key][2])
        (value, error), _, _ = self._cache[key]
        if error is not None:
            raise error
        result: T = value
        return result

    def known(self, key: str) -> Any:
        """What `remember` already computed for `key` (None: not yet, or it raised); never
        computes it."""
        found = self._cache.get(key)
        return None if found is None or found[0][1] is not None else found[0][0]

    @property
    def overdue(self) -> bool:
        return time.monotonic() - self.started > self.config.deadline_s
