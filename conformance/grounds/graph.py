"""The builds-on graph, as data: which requirement owns each ground, and what stands on it.

A check stands on grounds it does not judge: a generate answer with choices (GEN-001), a
readable stream (STREAM-001), a status that says what the body says (ERR-002), behind a
router the router's duties. Some are implied by what a check reads (`implied`), some declared
by the check (`@checks(builds_on=...)`, read through `registry.grounds_of`), some read from the
exchanges a failed check made (`EXCHANGE_GROUNDS`). `gate` asks before a check runs and
`verdict` after; nothing else decides whether a check is blocked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from conformance.grounds.probes import PROBES, Probe
from conformance.registry import grounds_of
from conformance.requirements import all_requirements, by_id
from conformance.session import Session
from conformance.wire.exchange import Exchange, stated_error

__all__ = ["grounds_of"]

UNREADABLE_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)
"""What reading an answer of the wrong form raises (a string where a list belongs, ...)."""
UNREADABLE = "its answer could not be read:"
"""How a ground's probe that tripped on such an answer says so: the answer's form, which the
SCHEMA-* checks judge, is what is broken (they are never blocked on it)."""

GROUND = "GEN-001"
"""What every check that reads a generate answer stands on (see `implied`)."""
TEXT_GROUND = "TEXT-001"
"""What every check that reads a text-mode answer stands on."""


def implied(s: Session, deciding: tuple[str, ...]) -> tuple[str, ...]:
    """The ground every check stands on without naming it: a generate answer with choices, and
    for a check of a text-mode answer, text on its choices (TEXT-001). Only where generate
    works, and not for the checks that judge that ground themselves (nor for a check whose
    requirement demands an error status: it reads no answer)."""
    if s.features.generate != "enabled" or {GROUND, "SCHEMA-GEN-001"} & set(deciding):
        return ()
    grounds = [GROUND]
    reqs = [by_id()[rid] for rid in deciding]
    reads_text = any("text-mode" in r.needs and r.expected_status is None for r in reqs)
    if reads_text and TEXT_GROUND not in deciding and "text-mode" in s.features.names():
        grounds.append(TEXT_GROUND)
    grounds += [g for g, over in STANDS_ON.items() if set(deciding) & set(over)]
    return tuple(g for g in grounds if g not in deciding)


LOGPROBS_GROUND = "LOGP-002"
"""What every check that reads logprob entries stands on: one entry per token, there at all."""
STANDS_ON: dict[str, tuple[str, ...]] = {
    LOGPROBS_GROUND: (
        "GEN-REQ-006",
        "LOGP-001",
        "LOGP-003",
        "LOGP-005",
        "LOGP-006",
        "LOGP-007",
        "LOGP-008",
        "TEXT-002",
        "TEXT-003",
    ),
}
"""Grounds by what stands on them: the requirements whose checks read what the ground's owner
judges. Where its probe shows it broken (logprobs null although asked for), exactly the owner
fails and these are blocked naming it."""


PACED_GROUND = "ROUTER-008"
"""Behind a router, what every check that acts on a stream in flight stands on: it is paced."""


SCHEMA_OWNERS = {"GenerateResponse": "SCHEMA-GEN-001", "GenerateStreamPayload": "SCHEMA-STREAM-001"}
"""The requirement that judges every received body of each schema (`checks/test_schema.py`)."""
SCHEMA_JUDGES = frozenset(SCHEMA_OWNERS.values())
MAX_LEAVES = 50
"""Leaves read of a body a failed check read: enough that a field of its own is never missed."""
STREAM_GROUND = "STREAM-001"
"""What every check that reads a stream stands on: a readable SSE stream."""
KEY_GROUND = "ROUTER-010"
"""Behind a router, what every check that sent the key stands on: the key reaches the engine."""
STATUS_GROUND = "ERR-002"
"""What every check that expects a rejection stands on: an error carries its status."""
STATUS_JUDGES = frozenset({STATUS_GROUND, "ROUTER-009"})
"""The requirements that judge an error's status themselves (never blocked on it)."""


@dataclass(frozen=True)
class ExchangeGround:
    """A requirement a failed check stands on when one of its exchanges `shows` the symptom."""

    rid: str
    shows: Callable[[Exchange], bool]
    judges: frozenset[str]  # checks of these judge the ground themselves: never blocked on it
    router_only: bool = False  # a router's duty: only where the run knows its engines


EXCHANGE_GROUNDS = (
    # Behind a router, a 401 to a request that sent the key, where the router is shown to keep
    # the key from the engines: one dropped header, one failure (ROUTER-010's).
    ExchangeGround(
        KEY_GROUND,
        lambda e: e.status == 401 and "Authorization" in e.headers,
        frozenset({KEY_GROUND}),
        router_only=True,
    ),
    # A success (or a router's 502) stating an error in its body, where a plainly invalid
    # generate is answered so too: the server rejected and misstated the status (ERR-002's).
    ExchangeGround(
        STATUS_GROUND,
        lambda e: stated_error(e.status, e.response_body) is not None,
        STATUS_JUDGES,
    ),
    # A stream read where a minimal stream is no readable SSE at all: STREAM-001's, not every
    # check that reads streams.
    ExchangeGround(STREAM_GROUND, lambda e: e.stream, frozenset({STREAM_GROUND})),
    # Behind a router, a stream held back until it ends: no action lands in flight on a stream
    # the client sees only whole (ROUTER-008's).
    ExchangeGround(PACED_GROUND, lambda e: e.stream, frozenset({PACED_GROUND}), router_only=True),
)
"""Grounds read from the failed check's own exchanges, in the order they are asked."""


@cache
def routed_duties() -> dict[str, tuple[str, ...]]:
    """Behind a router, the router's duty each requirement's evidence passes through (read
    when first asked: the catalogue is loaded then, never at import)."""
    return {
        "ROUTER-001": ("ABORT-002", "ABORT-003", "ABORT-004"),
        "ROUTER-002": ("ABORT-007",),
        "ROUTER-005": ("DP-001", "DP-002", "DP-003"),
        "ROUTER-006": ("GEN-RESP-004", "GEN-RESP-005", "GEN-RESP-006"),
        "ROUTER-007": ("TEXT-005", "TEXT-006", "TEXT-007", "GEN-REQ-010"),
        "ROUTER-009": tuple(
            r.id
            for r in all_requirements()
            if r.id == "ERR-002"
            or ((r.expected_status or 0) >= 400 and not r.id.startswith("ROUTER-"))
        ),
        "ROUTER-011": ("WV-007", "WV-009"),
    }


"""Behind a router, the router's duty each requirement's evidence passes through: an abort
that reaches no engine ends no request (ROUTER-001, -002), a rank header, request id or echo
the router drops is no engine's doing (ROUTER-005, -006, -007), an engine's rejection the
router rewrites is no engine's answer (ROUTER-009), a label set on one engine labels no fleet
(ROUTER-011). Where the run knows its engines and the duty fails, a failure of these is the
duty's: blocked on it (the suite's checks through `routed`, the folded-in fuzz's findings
through `fuzz.merge`). Where the duty holds, they judge as on one server."""


def routed(s: Session, ids: tuple[str, ...]) -> tuple[str, ...]:
    """The router duties `ids` stand on (`routed_duties`), where the run knows its engines."""
    if not s.features.engines:
        return ()
    return routed_grounds(ids)


def routed_grounds(ids: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(d for d, over in routed_duties().items() if set(ids) & set(over))


OWNED: dict[str, str] = {
    "ABORT-001": "abort-route",
    "AUTH-001": "key-demanded",
    "GEN-001": "choices-listed",
    "GEN-REQ-007": "same-seed-twice",
    "GEN-RESP-001": "ids-agree",
    "GEN-RESP-002": "finish-reasons",
    "GEN-RESP-003": "usage-counts",
    "GEN-RESP-005": "header-id",
    "ERR-002": "error-status",
    "DISABLED-001": "gated",
    "LOGP-002": "logprob-count",
    "LOGP-009": "logprobs-limit",
    "ROUTER-005": "rank-passes",
    "ROUTER-006": "ids-pass",
    "ROUTER-007": "echo-passes",
    "ROUTER-008": "stream-paced",
    "ROUTER-009": "errors-pass",
    "ROUTER-010": "key-passes",
    "ROUTER-011": "labels-reach",
    "STREAM-001": "stream-events",
    "STREAM-002": "stream-done",
    "STREAM-003": "deltas",
    "TEXT-001": "text-present",
    "TEXT-009": "text-deltas",
    "WV-001": "weight-lists",
    "WV-002": "spans-cover",
    "WV-003": "stream-lists",
    "WV-007": "label-applied",
}
"""Requirement ID -> the probe (`probes.PROBES`) that shows its ground broken: the requirement
owns that ground, its own check judges it, and what builds on it is blocked naming it."""


@cache
def foundations() -> dict[str, Probe]:
    """Requirement ID -> the probe that shows its ground broken (in catalogue order)."""
    known = by_id()
    return {rid: PROBES[name] for rid, name in OWNED.items() if rid in known}
