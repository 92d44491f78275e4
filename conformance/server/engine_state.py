"""What the engines are doing, read from each engine itself, never through a router.

The disconnect and abort checks must know whether an engine still runs a request. vLLM says so
on its Prometheus `/metrics` (`vllm:num_requests_running` and `..._waiting`, and
`vllm:request_success_total` by `finished_reason`); the mock says the same there and on
`/mock/stats`. Behind a router two reads may reach two engines, so the state of a deployment is
the sum over every engine, each read at its own URL (`--engine`), or the server's own when the
run was given none.

vLLM 0.32 counts a request that ran to its end (stop, length) but not one it aborted: an abort
is seen as a request that left the engine without a natural finish (`hangup`'s rule).

An engine that names the requests it holds (the mock's `/mock/stats` `held`, and `hung_up`: the
held ones whose client went away) says more: whether one request is still there after an abort
was answered (`EngineState.holds`, the `ENGINE` evidence of `proof.engine_proof`), and whether
it heard a client hang up on a request it held (`heard_hang_up`). vLLM names none: there, the
counts and the bound decide.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from conformance.wire import Client, ServerBroke

RUNNING = ("vllm:num_requests_running", "vllm:num_requests_waiting")
FINISHED = "vllm:request_success"  # the parser drops the counter's `_total`
NATURAL = ("stop", "length")


@dataclass(frozen=True)
class Counts:
    """One reading: requests on the engines, and those that ended, by how."""

    in_flight: int = 0
    finished: int = 0  # ended on their own: stop or length
    aborted: int = 0  # ended by an abort, where the engine counts it (the mock does)

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.in_flight + other.in_flight,
            self.finished + other.finished,
            self.aborted + other.aborted,
        )

    def describe(self) -> str:
        return f"in flight {self.in_flight}, finished {self.finished}, aborted {self.aborted}"


def from_metrics(text: str) -> Counts | None:
    """A Prometheus text page as Counts (None: it carries no vLLM request gauges)."""
    in_flight = finished = aborted = 0
    seen = False
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError:
        return None
    for family in families:
        for sample in family.samples:
            if sample.name in RUNNING:
                seen = True
                in_flight += int(sample.value)
            elif family.name == FINISHED and sample.name.endswith("_total"):
                reason = sample.labels.get("finished_reason")
                if reason in NATURAL:
                    finished += int(sample.value)
                elif reason == "abort":
                    aborted += int(sample.value)
    return Counts(in_flight, finished, aborted) if seen else None


def from_stats(data: object) -> Counts | None:
    """The mock's `/mock/stats` as Counts (None: not its counters)."""
    if not isinstance(data, dict) or "in_flight" not in data:
        return None
    ended = data.get("finished")
    finished = ended if isinstance(ended, dict) else {}
    return Counts(
        int(data.get("in_flight") or 0),
        sum(v for k, v in finished.items() if k in NATURAL and isinstance(v, int)),
        int(data.get("aborted") or 0),
    )


def read_one(client: Client) -> Counts | None:
    """One engine's counts: `/metrics` first (vLLM's and the mock's), else `/mock/stats`."""
    metrics = _body(client, "/metrics")
    found = None if metrics is None else from_metrics(metrics.decode("utf-8", "replace"))
    return found if found is not None else from_stats(read_stats(client))


def read_stats(client: Client) -> dict[str, Any] | None:
    """One engine's `/mock/stats` as sent (None: not served, or not a JSON object). The suite's
    one reader of it: the counts, the requests it names and the probe's `mock-stats` all ask
    here."""
    body = _body(client, "/mock/stats")
    try:
        data = None if body is None else json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _body(client: Client, path: str) -> bytes | None:
    """A 200's body from `path`, asked without a key (None: no such answer)."""
    try:
        reply = client.get(path, auth=False)
    except ServerBroke:
        return None
    return reply.body if reply.status == 200 else None


def named_ids(client: Client, key: str = "held") -> set[str] | None:
    """The request ids one engine names under `key` of its `/mock/stats`: `held` (queued or
    running) or `hung_up` (held ones whose client went away); None: it names none."""
    stats = read_stats(client)
    named = None if stats is None else stats.get(key)
    if not isinstance(named, list) or not all(isinstance(i, str) for i in named):
        return None
    return set(named)


class EngineState:
    """The deployment's counts: every engine read at its own URL, summed."""

    def __init__(self, clients: list[Client]) -> None:
        self.clients = clients
        self._names: bool | None = None  # whether every engine names what it holds

    def holds(self, ids: Iterable[str]) -> bool | None:
        """Whether some engine holds a request by one of `ids` (None: an engine names none,
        or could not be read; asked once, an engine that names none is not asked again)."""
        return self._names_any("held", ids)

    def heard_hang_up(self, ids: Iterable[str]) -> bool | None:
        """Whether some engine says the client of a request by one of `ids` went away while it
        held the request (None: an engine names none)."""
        return self._names_any("hung_up", ids)

    def _names_any(self, key: str, ids: Iterable[str]) -> bool | None:
        if self._names is False:
            return None
        wanted = set(ids)
        found = False
        for client in self.clients:
            named = named_ids(client, key)
            if named is None:
                if self._names is None:
                    self._names = False
                return None
            found = found or bool(named & wanted)
        self._names = True
        return found

    def read(self) -> Counts | None:
        """The sum over every engine (None: one of them could not be read)."""
        total = Counts()
        for client in self.clients:
            one = read_one(client)
            if one is None:
                return None
            total += one
        return total

    def where(self) -> str:
        return ", ".join(c.base_url for c in self.clients)

    def close(self) -> None:
        for client in self.clients:
            client.close()
