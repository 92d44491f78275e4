"""What the engines say of one request of a load run, read while it runs: the data-parallel
rank that holds it (a pinned request), and whether they let go of it once its client hung up.

Only engines that name what they hold say either (the mock's `/mock/stats`: `held`,
`hung_up` and `held_by_rank`); vLLM names none, and then neither is judged. Each read is
(sent, answered) in seconds since the request was sent, beside what it saw, so the judge
can hold a FAIL to evidence a slower client cannot manufacture (`conformance.inflight.proof`):
a later read only gives a correct server more time to have let go, and the rank that holds a
request is the engines' own word.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from conformance.server.engine_state import EngineState, read_stats

GRACE_S = 0.25
"""The least time the engines get to let go of a request once its client hung up."""
GRACE_STEPS = 10
"""... and at least this many steps at the learned pace (a step is when an engine can act)."""


def grace_s(itl_s: float | None, ttft_s: float | None) -> float:
    """How long after a hang-up a correct server still may hold the request."""
    return max(GRACE_S, GRACE_STEPS * (itl_s or 0.0), 2 * (ttft_s or 0.0))


@dataclass(frozen=True)
class Read:
    """One read of the engines: when it was sent and answered, and what it saw."""

    sent: float
    answered: float
    held: bool
    hung_up: bool = False
    ranks: tuple[str, ...] = ()  # the ranks that hold it (`held_by_rank`)


def read(state: EngineState, ids: Iterable[str], began: float) -> Read | None:
    """What every engine says of the request by one of `ids` (None: an engine names none)."""
    wanted = set(ids)
    sent = time.monotonic() - began
    held = hung_up = False
    ranks: set[str] = set()
    for client in state.clients:
        stats = read_stats(client)
        named = None if stats is None else stats.get("held")
        if not isinstance(named, list):
            return None
        held = held or bool(wanted & set(map(str, named)))
        hung = stats.get("hung_up") if stats else None
        hung_up = hung_up or (isinstance(hung, list) and bool(wanted & set(map(str, hung))))
        by_rank = stats.get("held_by_rank") if stats else None
        if isinstance(by_rank, dict):
            for rank, listed in by_rank.items():
                if isinstance(listed, list) and wanted & set(map(str, listed)):
                    ranks.add(str(rank))
    return Read(sent, time.monotonic() - began, held, hung_up, tuple(sorted(ranks)))


def after_hang_up(state: EngineState, ids: Iterable[str], began: float, grace: float) -> list[Read]:
    """The reads after a client hung up: one at once, and, if the engines still held the
    request then, one once `grace` has passed since the hang-up."""
    ids = list(ids)
    gone = time.monotonic() - began
    first = read(state, ids, began)
    if first is None or not first.held:
        return [] if first is None else [first]
    time.sleep(max(0.0, gone + grace - (time.monotonic() - began)))
    second = read(state, ids, began)
    return [first] if second is None else [first, second]
