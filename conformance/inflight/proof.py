"""The one proof obligation of every in-flight verdict: a FAIL rests only on evidence that a
slower client cannot manufacture.

An action (an abort, a hang-up, a label change) that a request outlived fails its requirement
only on one of three grounds, and each requirement names the grounds it takes
(`Requirement.proofs`):

- `STATEMENT`: the server's own word (a finish reason, an error, the spans it labelled);
- `ENGINE`: the engines' own state, read from the server after the action was answered: their
  counters (the hang-ups), or, where an engine names the requests it holds, that request still
  held after the action was answered (`engine_proof`);
- `BOUND`: the request could not have ended before the action reached the server. The bound
  is the fastest the server has been seen to complete the same request, non-streamed, from
  the same client (`Fastest`), times `SHARE`: a request is never taken to end sooner than half
  its fastest completion. The action counts only if it was sent once the request was provably
  known to the server (its first token seen, or its expected first token due) and answered
  before that bound. A busy or slow client only makes its answer later and the bound never
  smaller, so slowness errs toward "could have ended": never a false FAIL.

The client's reading pace (gaps between the events it read) is never evidence: on a fast
server or a loaded client, reading is the slow part.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable

from conformance.requirements.model import Proof

__all__ = ["SAMPLES", "SHARE", "Fastest", "Proof", "bound_proof", "engine_proof"]

SHARE = 0.5
"""The bound is this share of the fastest completion seen: the same request, run again, is
taken to end no sooner than half its fastest time (errs toward "could have ended")."""
SAMPLES = 3
"""Completions sampled per request shape: the fastest of three filters a busy client's
scheduling delays out of the bound."""


class Fastest:
    """The fastest completion seen per request shape (seconds, the client's wall clock from
    writing a non-streamed request to reading its answer's head, which leaves the server once
    the generation has ended: the body's reading is the client's pace). Filled by `sample`
    (the caller's function sends the request once and says how long it took, None: it did
    not complete), and by any completion seen on the way (`seen`)."""

    def __init__(self) -> None:
        self._times: dict[Hashable, list[float]] = {}
        self._lock = threading.Lock()

    def seen(self, shape: Hashable, seconds: float) -> None:
        with self._lock:
            self._times.setdefault(shape, []).append(seconds)

    def of(self, shape: Hashable, sample: Callable[[], float | None]) -> float | None:
        """The fastest completion of `shape`, sampled up to SAMPLES times (None: the server
        never completed it)."""
        for _ in range(SAMPLES - len(self._times.get(shape, []))):
            took = sample()
            if took is None:
                break
            self.seen(shape, took)
        found = self._times.get(shape)
        return min(found) if found else None

    def times(self) -> dict[Hashable, float]:
        """The fastest completion of every shape sampled so far."""
        with self._lock:
            return {shape: min(found) for shape, found in self._times.items() if found}


def bound_proof(
    actions: Iterable[tuple[float, float]], known_s: float | None, fastest_s: float | None
) -> str | None:
    """BOUND: the words of the proof that some action reached the request before it could have
    ended, or None when none provably did. `actions` are (sent, answered) in seconds since the
    request was sent; `known_s` is when the server provably knew the request (its first token
    seen, or due); `fastest_s` the fastest completion of the same request."""
    if fastest_s is None or known_s is None:
        return None
    bound = SHARE * fastest_s
    for sent, answered in actions:
        if sent >= known_s and answered < bound:
            return (
                f"evidence ({Proof.BOUND}): an action sent at {sent * 1000:.0f} ms, once the "
                f"server knew the request ({known_s * 1000:.0f} ms), was answered at "
                f"{answered * 1000:.0f} ms; the same request never completed in under "
                f"{fastest_s * 1000:.0f} ms (fastest of its non-streamed runs), so it could "
                f"not have ended before {bound * 1000:.0f} ms"
            )
    return None


def engine_proof(
    actions: Iterable[tuple[float, float]],
    reads: Iterable[tuple[float, float, bool]],
    known_s: float | None,
) -> str | None:
    """ENGINE: the words of the proof that some action reached the server while it held the
    request, or None. `reads` are (sent, answered, held) of the engines' state. The action must
    have been sent once the server provably held the request (`known_s`: its first token seen;
    or a read answered before it was sent saw it held), and a read sent after the action was
    answered must see it still held: a request held before and after the server took the action
    was held when it did (a request that ended is never held again; a slow client only moves
    reads later, where a correct server has ended it)."""
    held = [(sent, answered) for sent, answered, is_held in reads if is_held]
    for sent, answered in actions:
        before = [a for _, a in held if a <= sent]
        if not before and (known_s is None or sent < known_s):
            continue
        after = [r for r, _ in held if r >= answered]
        if after:
            since = (
                f"a read answered at {before[-1] * 1000:.0f} ms saw it held"
                if before
                else f"its first token came at {(known_s or 0.0) * 1000:.0f} ms"
            )
            return (
                f"evidence ({Proof.ENGINE}): an action sent at {sent * 1000:.0f} ms ({since}) "
                f"was answered at {answered * 1000:.0f} ms; a read of the engines sent at "
                f"{after[0] * 1000:.0f} ms still saw the request held"
            )
    return None
