"""Verdicts and figures of a load run, as plain data a worker sends and the master merges.

A worker keeps a `Tally` and hands the master what changed since its last report
(`Tally.take`); the master adds each delta into its own (`Tally.add`). Every field merges by
addition (counts, per-second buckets, samples) or by the earliest (a requirement's first
violation), so the order reports arrive in never changes the result.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

ITL_PER_REQUEST = 32
"""Inter-token gaps kept per streamed request (its first ones): bounded reports."""


@dataclass
class Violation:
    """A requirement's violation: what broke, the curl that reproduces it, when and at what
    load (seconds since the run began, requests in flight on that worker, its request rate)."""

    requirement: str
    message: str
    reproducer: str
    at_s: float
    in_flight: int
    rate: float
    worker: str = ""


@dataclass
class Tally:
    """What one worker (or the master, merged) saw."""

    started_at: float = field(default_factory=time.time)
    judged: dict[str, int] = field(default_factory=dict)
    violations: dict[str, int] = field(default_factory=dict)
    unproven: dict[str, int] = field(default_factory=dict)  # could not be proven either way
    first: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: dict[int, dict[str, int]] = field(default_factory=dict)  # per second of the run
    ttft: list[tuple[float, float]] = field(default_factory=list)  # (at_s, seconds)
    e2e: list[tuple[float, float, int]] = field(default_factory=list)  # (at_s, seconds, stream)
    itl: list[float] = field(default_factory=list)
    in_flight: int = 0
    drained: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def at(self) -> float:
        return time.time() - self.started_at

    def bump(self, what: str, count: int = 1, at_s: float | None = None) -> None:
        second = int(self.at() if at_s is None else at_s)
        with self._lock:
            bucket = self.seconds.setdefault(second, {})
            bucket[what] = bucket.get(what, 0) + count

    def judge(self, requirement: str, count: int = 1) -> None:
        if count:
            with self._lock:
                self.judged[requirement] = self.judged.get(requirement, 0) + count

    def doubt(self, requirement: str) -> None:
        with self._lock:
            self.unproven[requirement] = self.unproven.get(requirement, 0) + 1

    def violate(self, v: Violation) -> None:
        with self._lock:
            self.judged[v.requirement] = self.judged.get(v.requirement, 0) + 1
            self.violations[v.requirement] = self.violations.get(v.requirement, 0) + 1
            if v.requirement not in self.first or v.at_s < self.first[v.requirement]["at_s"]:
                self.first[v.requirement] = dict(v.__dict__)
        self.bump("violations", at_s=v.at_s)
        self.bump(f"violations:{v.requirement}", at_s=v.at_s)

    def rate(self, window: int = 5) -> float:
        """Requests ended per second over the last `window` whole seconds."""
        now = int(self.at())
        with self._lock:
            ended = sum(
                self.seconds.get(s, {}).get("requests", 0) for s in range(now - window, now)
            )
        return ended / window

    # ---------------------------------------- worker -> master

    def take(self) -> dict[str, Any]:
        """Everything counted since the last `take`, as JSON-able data; the counts start
        again from zero (in-flight and drained are states, sent as they are)."""
        with self._lock:
            delta = {
                "judged": self.judged,
                "violations": self.violations,
                "unproven": self.unproven,
                "first": self.first,
                "seconds": {str(k): v for k, v in self.seconds.items()},
                "ttft": self.ttft,
                "e2e": self.e2e,
                "itl": self.itl,
                "in_flight": self.in_flight,
                "drained": self.drained,
            }
            self.judged, self.violations, self.unproven = {}, {}, {}
            self.first, self.seconds = {}, {}
            self.ttft, self.e2e, self.itl = [], [], []
        return delta

    def add(self, delta: dict[str, Any]) -> None:
        """Fold a worker's `take` in (its in-flight and drained are kept per worker by the
        caller)."""
        with self._lock:
            for name in ("judged", "violations", "unproven"):
                mine = getattr(self, name)
                for key, count in delta.get(name, {}).items():
                    mine[key] = mine.get(key, 0) + int(count)
            for key, first in delta.get("first", {}).items():
                if key not in self.first or first["at_s"] < self.first[key]["at_s"]:
                    self.first[key] = dict(first)
            for second, bucket in delta.get("seconds", {}).items():
                mine = self.seconds.setdefault(int(second), {})
                for what, count in bucket.items():
                    mine[what] = mine.get(what, 0) + int(count)
            self.ttft += [(float(a), float(b)) for a, b in delta.get("ttft", [])]
            self.e2e += [(float(a), float(b), int(c)) for a, b, c in delta.get("e2e", [])]
            self.itl += [float(x) for x in delta.get("itl", [])]

    def total(self, what: str) -> int:
        with self._lock:
            return sum(bucket.get(what, 0) for bucket in self.seconds.values())
