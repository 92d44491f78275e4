"""After a check runs: the one function that decides its status (`decide`).

What the check raised is a value (`conformance.outcomes`), read by its type and fields. A
failure may still not be the check's own: one of its exchanges shows a ground broken whose
probe shows it broken too (`graph.EXCHANGE_GROUNDS`), or it read an answer malformed outside
its own requirements' fields (the SCHEMA-* requirement's). Then it is blocked naming that
requirement: one defect, one failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import pytest

from conformance import api
from conformance.grounds import graph
from conformance.grounds.gate import broken
from conformance.outcomes import (
    Failure,
    Inconclusive,
    OutOfReach,
    Skip,
    SkipKind,
    Status,
)
from conformance.requirements import by_id
from conformance.session import Session
from conformance.verdicts.reproducer import reproducer_for
from conformance.verdicts.results import CheckResult, RequirementResult
from conformance.wire import ServerBroke

MAX_LEAVES = 50
"""Leaves read of a body a failed check read: enough that a field of its own is never missed."""
TRACE_CHARS = 1500
"""How much of a harness error's traceback a report keeps."""
STREAMED = " (stream) "
"""How a fuzz check's name shows a streamed answer, for the reader (the verdict reads
`CheckResult.streamed`, never the name)."""
ERRORS_GROUND = "ROUTER-009"
"""Behind a router, what a finding on an error answer stands on: the router shown to answer
errors its own way (a 502 for an engine's 400, its own 422 in plain text) made that answer."""


@dataclass(frozen=True)
class Ran:
    """What pytest saw of one check: which requirements it decides, at which phase it ended
    (`setup` or `call`), what it raised (None: it returned) and its traceback's text."""

    name: str
    ids: tuple[str, ...]
    when: str
    raised: BaseException | None
    trace: str = ""
    took: float = 0.0


class Malformed(NamedTuple):
    """An answer a check read that breaks the spec's schema, at its first leaf."""

    own: bool  # malformed in the fields of the check's own requirements
    schema: str
    what: str
    body: Any
    owner: str  # the SCHEMA-* requirement that judges every body of `schema`
    leaf: str


def decide(s: Session | None, ran: Ran) -> CheckResult:
    """The status of one check that ran against `s` (None: the session could not open)."""
    exc, name, took = ran.raised, ran.name, ran.took
    if exc is None:
        return CheckResult(name, Status.PASS, duration_s=took)
    if isinstance(exc, Skip):
        return CheckResult(
            name,
            Status.SKIP,
            exc.reason,
            duration_s=took,
            skip_kind=exc.kind,
            blocked_by=exc.blocked_by,
            measured=dict(exc.measured),
        )
    if isinstance(exc, pytest.skip.Exception):  # a plain pytest.skip: not applicable here
        why = str(getattr(exc, "msg", "") or "skipped")
        return CheckResult(name, Status.SKIP, why, duration_s=took, skip_kind=SkipKind.ABSENT)
    if isinstance(exc, OutOfReach):  # never a fail or error
        return CheckResult(
            name,
            Status.SKIP,
            str(exc),
            duration_s=took,
            skip_kind=SkipKind.LIMIT,
            measured=dict(exc.measured),
        )
    judged = ran.when == "call"
    if s is not None and judged:
        ground = _ground(s, ran.ids, isinstance(exc, api.StatusMismatch))
        if ground is not None:
            by, why = ground
            return CheckResult(
                name,
                Status.SKIP,
                f"blocked by {by}: {why}",
                duration_s=took,
                skip_kind=SkipKind.BLOCKED,
                blocked_by=by,
            )
    failed = isinstance(exc, (Failure, pytest.fail.Exception)) or (
        judged and isinstance(exc, (AssertionError, ServerBroke))
    )
    unreadable = _unreadable(s, ran.ids, exc) if s is not None and judged else None
    if unreadable is not None:
        failed, message = True, unreadable
    elif isinstance(exc, Failure):
        message = exc.message
    elif isinstance(exc, pytest.fail.Exception):
        message = str(exc.msg)
    elif failed:
        message = str(exc)
    else:
        message = f"{type(exc).__name__}: {exc}"
    inconclusive = isinstance(exc, Inconclusive)
    if inconclusive:
        message = f"inconclusive: {exc}"
    elif not failed:
        message = f"harness error: {message}\n{ran.trace[-TRACE_CHARS:]}"
    if failed and s is not None:
        s.failing.update(ran.ids)
    log = s.client.log if s is not None else []
    return CheckResult(
        name,
        Status.FAIL if failed else Status.ERROR,
        message.strip(),
        reproducer_for(exc, log),
        duration_s=took,
        inconclusive=inconclusive,
    )


def found(
    name: str, message: str, reproducer: str, streamed: bool = False, answered: int | None = None
) -> CheckResult:
    """A fuzz finding under a requirement: a failure, held to the suite's grounds by `held`
    (which reads what it judged, a stream and an HTTP status, from the fields)."""
    return CheckResult(name, Status.FAIL, message, reproducer, streamed=streamed, answered=answered)


def tallied(
    name: str, judged: int, violations: int, message: str, reproducer: str, took: float
) -> CheckResult:
    """A requirement judged over many answers (a load run): a failure when one violates it, a
    pass when some were judged and none did, else a skip (no answer of its kind came)."""
    if violations:
        return CheckResult(name, Status.FAIL, message, reproducer, took)
    if judged:
        return CheckResult(name, Status.PASS, message, duration_s=took)
    return CheckResult(name, Status.SKIP, message, duration_s=took, skip_kind=SkipKind.ABSENT)


def unfound(rid: str) -> CheckResult:
    """A requirement the fuzzer exercised and found nothing against: a pass."""
    return CheckResult(f"fuzz {rid}", Status.PASS, "no fuzz failure")


def _ground(s: Session, ids: tuple[str, ...], status: bool = False) -> tuple[str, str] | None:
    """The requirement a failed check is blocked on instead, and why (None: its failure
    stands). A wrong `status` is the server's choice: no malformed body read before it
    explains it."""
    return _exchange_ground(s, ids) or (None if status else _malformed_ground(s, ids))


def _exchange_ground(s: Session, ids: tuple[str, ...]) -> tuple[str, str] | None:
    """The first of `EXCHANGE_GROUNDS` the failed check's exchanges show and whose probe
    shows broken on this server (never where the check judges that ground itself, where the
    ground is not in the run, or, for a router's ground, where the run knows no engines)."""
    for ground in graph.EXCHANGE_GROUNDS:
        if set(ids) & ground.judges or (ground.router_only and not s.features.engines):
            continue
        if s.selected is not None and ground.rid not in s.selected:
            continue
        if not any(ground.shows(e) for e in s.client.log):
            continue
        why = broken(s, ground.rid)
        if why is not None and why.unreadable and set(ids) & graph.SCHEMA_JUDGES:
            continue  # the ground tripped on the form they judge: they fail, it waits
        if why is not None:
            return ground.rid, why.why
    return None


def _malformed_ground(s: Session, ids: tuple[str, ...]) -> tuple[str, str] | None:
    """When a failed check read an answer that breaks the spec's schema outside the fields
    its own requirements govern (`Requirement.fields`), the answer's form is what is wrong,
    and the SCHEMA-* requirement that judges every body fails for it at the leaf. The check
    is blocked naming it, not failed: one malformed field fails the requirements about it,
    not each check that tripped on it. (Not where SCHEMA-* is not in the run, and never for
    the SCHEMA-* checks themselves.)"""
    if set(ids) & graph.SCHEMA_JUDGES:
        return None
    found = _malformed(s, ids)
    if found is None or found.own:
        return None  # malformed where the check's own requirement speaks: it fails
    s.malformed.append((found.schema, found.what, found.body))  # judged there, always
    return found.owner, f"it read a malformed answer, {found.what}: {found.leaf}"


def _malformed(s: Session, ids: tuple[str, ...]) -> Malformed | None:
    """The first malformed answer the check read; one malformed in its own requirements'
    fields comes first. None: every answer it read has the spec's form."""
    own = {f for rid in ids for f in by_id()[rid].fields}
    first: Malformed | None = None
    for schema, what, body in s.recent:  # every body it read, before deciding
        owner = graph.SCHEMA_OWNERS.get(schema)
        if owner is None or (s.selected is not None and owner not in s.selected):
            continue
        leaves = api.schema_leaves(schema, body, limit=MAX_LEAVES, every=True)
        mine = [leaf for leaf in leaves if leaf.keys & own]
        if mine:
            return Malformed(True, schema, what, body, owner, mine[0].text)
        if leaves and first is None:
            first = Malformed(False, schema, what, body, owner, leaves[0].text)
    return first


def _unreadable(s: Session, ids: tuple[str, ...], exc: BaseException) -> str | None:
    """A check that could not read an answer malformed in its own requirement's fields (a
    string where its logprobs belong) fails on that field, as it would have judged it: the
    harness did not break, the answer did."""
    if not isinstance(exc, graph.UNREADABLE_ERRORS):
        return None
    found = _malformed(s, ids)
    if found is None or not found.own:
        return None
    return f"{found.what} could not be read: {found.leaf}"


def failing_ground(
    suite: Mapping[str, RequirementResult],
    rid: str,
    behind_router: bool,
    check: CheckResult | None = None,
) -> RequirementResult | None:
    """The first requirement `rid` (and the fuzz `check` of it) stands on that failed in the
    suite's own checks, if any. A finding on a stream stands on a readable stream, as the
    suite's checks that read one do (`collector.EXCHANGE_GROUNDS`); one on an error answer
    behind a router, on the router's passing errors through (`ERRORS_GROUND`)."""
    own = suite.get(rid)
    named = [c.blocked_by for c in (own.checks if own is not None else []) if c.blocked_by]
    routes = graph.routed_grounds((rid,)) if behind_router else ()
    streamed = (graph.STREAM_GROUND,) if check is not None and check.streamed else ()
    answered = check.answered if check is not None else None
    error = (ERRORS_GROUND,) if behind_router and answered is not None and answered >= 400 else ()
    for ground in dict.fromkeys((*named, *graph.grounds_of(rid), *routes, *streamed, *error)):
        found = suite.get(ground)
        if ground != rid and found is not None and found.status is Status.FAIL:
            return found
    return None


def held(check: CheckResult, ground: RequirementResult | None) -> CheckResult:
    """A fuzz failure that stands on a failing `ground`: shown, blocked naming it."""
    if check.status is not Status.FAIL or ground is None:
        return check
    why = ground.reason.strip().splitlines()[0][:200] if ground.reason else "it fails"
    return CheckResult(
        check.name,
        Status.SKIP,
        f"blocked by {ground.requirement.id}: {why}; the fuzzer found: {check.message}",
        check.reproducer,
        check.duration_s,
        skip_kind=SkipKind.BLOCKED,
        blocked_by=ground.requirement.id,
        streamed=check.streamed,
        answered=check.answered,
    )
