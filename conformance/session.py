"""The state every check reads: configuration, the probed features, the client."""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from .features import KNOWN_FEATURES, Features, probe
from .http import Client

T = TypeVar("T")


@dataclass(frozen=True)
class SuiteConfig:
    base_url: str
    api_key: str | None = None
    expect: frozenset[str] = frozenset()
    timeout: float = 10.0  # per request
    stream_deadline: float = 30.0  # per stream, wall clock
    deadline_s: float = 600.0  # whole run
    warmup_timeout: float = 30.0  # the first generate (a real server's first request is slow)
    profile: str | None = None
    requirement_ids: frozenset[str] | None = None  # run only the checks of these
    keyword: str | None = None  # pytest -k

    def __post_init__(self) -> None:
        unknown = sorted(self.expect - set(KNOWN_FEATURES))
        if unknown:
            raise ValueError(
                f"unknown feature(s) in --expect: {', '.join(unknown)} "
                f"(known: {', '.join(KNOWN_FEATURES)})"
            )


@dataclass
class Session:
    config: SuiteConfig
    client: Client
    features: Features
    started: float = field(default_factory=time.monotonic)
    session_id: str = field(default_factory=lambda: secrets.token_hex(4))
    _counter: itertools.count[int] = field(default_factory=itertools.count)
    _cache: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, config: SuiteConfig) -> Session:
        client = Client(config.base_url, config.api_key, config.timeout, config.stream_deadline)
        try:
            features = probe(client, warmup_timeout=max(config.timeout, config.warmup_timeout))
        except BaseException:
            client.close()
            raise
        client.log.clear()
        return cls(config, client, features)

    def close(self) -> None:
        self.client.close()

    def rid(self, tag: str) -> str:
        """A request id unique to this run, so runs against one server never collide."""
        return f"tito-{self.session_id}-{next(self._counter)}-{tag}"

    def need(self, *names: str) -> None:
        """Skip unless the server has these features; fail if they were claimed but are absent."""
        detected = set(self.features.names())
        for name in names:
            if name in detected:
                continue
            if name in self.config.expect:
                pytest.fail(
                    f"claimed feature {name!r} (--expect) was not detected: "
                    f"{self.features.why_not(name)}"
                )
            pytest.skip(f"not applicable: {self.features.why_not(name)}")

    def need_generate(self) -> None:
        """Generate must work: a broken (hung, garbage) generate is a failure, not a skip."""
        if self.features.generate == "broken":
            pytest.fail(f"generate does not work: {self.features.why_not('scale-out')}")
        if self.features.generate != "enabled":
            self.need("scale-out")

    def remember(self, key: str, factory: Callable[[], T]) -> T:
        """Compute a shared exchange once per run (several checks judge the same answer)."""
        if key not in self._cache:
            before = len(self.client.log)
            try:
                outcome: tuple[Any, BaseException | None] = (factory(), None)
            except (AssertionError, pytest.skip.Exception) as exc:
                outcome = (None, exc)
            self._cache[key] = (outcome, self.client.log[before:])
        else:
            self.client.log.extend(self._cache[key][1])
        (value, error), _ = self._cache[key]
        if error is not None:
            raise error
        result: T = value
        return result

    @property
    def overdue(self) -> bool:
        return time.monotonic() - self.started > self.config.deadline_s
