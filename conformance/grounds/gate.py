"""Before a check runs: whether it may judge at all on this server.

A check needs features, limits and sound grounds. Gating decides here, from the check's
declaration and the probed server, and raises the outcome (`conformance.outcomes`): `Absent`
for a feature detected absent, `ClaimedAbsent` where the feature was claimed and its anchor is
decided here, `Blocked` naming the requirement that owns a broken ground or claim, `Limit`
naming the configuration's numbers. A check that finds its evidence unusable mid-run asks here
too (`builds_on`, `need_logprobs`): if the ground is sound, it goes on and judges.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from conformance.grounds import graph
from conformance.grounds.graph import PACED_GROUND, UNREADABLE, UNREADABLE_ERRORS
from conformance.outcomes import Absent, Blocked, ClaimedAbsent, Failure, Limit, NotClaimed
from conformance.registry import Needs
from conformance.requirements import by_id
from conformance.session import Session


@dataclass(frozen=True)
class Broken:
    """What a ground's probe showed broken. `unreadable`: it tripped on an answer it could not
    read as the ground needs (its form is what is wrong, which the SCHEMA-* checks judge)."""

    why: str
    unreadable: bool = False

    def __str__(self) -> str:
        return self.why


def broken(s: Session, rid: str) -> Broken | None:
    """What the probe of `rid` found broken on this server (None: sound, or not knowable)."""

    def probe() -> Broken | None:
        try:
            found = graph.foundations()[rid](s)
        except (AssertionError, pytest.skip.Exception, pytest.fail.Exception):
            return None  # the probe could not run: nothing is shown broken
        except UNREADABLE_ERRORS as exc:
            # the answer could not even be read as the ground needs (text deltas that are no
            # strings, spans that are no objects): the ground is broken, and its own check
            # says how; what builds on it is blocked instead of breaking on it
            return Broken(f"{UNREADABLE} {type(exc).__name__}: {exc}", unreadable=True)
        return None if found is None else Broken(found)

    return s.remember(_probed(rid), probe)


def _probed(rid: str) -> str:
    """Where the run keeps what the probe of `rid` found (`Session.remember`)."""
    return f"foundation:{rid}"


def unpaced_blocks(s: Session) -> None:
    """Behind a router an earlier check showed holding streams back (PACED_GROUND's probe), a
    check about to act on a stream in flight is blocked before it spends its attempts (some
    15 s each): its failure would be blocked on the same ground afterwards. Nothing is probed
    here; a run that has not shown the ground broken acts as before."""
    if s.config.engines and s.known(_probed(PACED_GROUND)):
        builds_on(s, PACED_GROUND)


def builds_on(s: Session, *rids: str) -> None:
    """Block the running check if any ground it names is broken. Called before a check runs
    (its declared `builds_on`) and by a check that finds its evidence unusable: if the ground is
    sound there, the check goes on to judge, and fails on its own evidence."""
    for rid in rids:
        found = _deepest(s, rid, frozenset())
        if found is not None:
            raise Blocked(found[0], str(found[1]))


def _deepest(s: Session, rid: str, seen: frozenset[str]) -> tuple[str, Broken] | None:
    """`rid` and what is broken under it, or, when its own probe trips on a broken ground of
    its own checks, that ground (deepest first): a blocked check names a requirement that
    fails, not one that is itself blocked."""
    if rid not in graph.foundations():
        return None
    why = broken(s, rid)
    if why is None:
        return None
    for under in (*graph.grounds_of(rid), *graph.routed(s, (rid,))):
        if under not in seen and under != rid:
            found = _deepest(s, under, seen | {rid})
            if found is not None:
                return found
    return rid, why


def before(s: Session, ids: tuple[str, ...], needs: Needs) -> None:
    """Gate a check deciding `ids` with `needs` before it runs: its features and limits, the
    grounds it reads without naming them (`graph.implied`), behind a router the duties its
    evidence passes through (`graph.routed`), and the grounds it declares."""
    if s.overdue:  # the harness's doing: an error, never the server's failure
        raise RuntimeError(f"run deadline of {s.config.deadline_s:g} s exceeded before this check")
    what = by_id()[ids[0]].title if ids else "this check"
    applies(s, needs, what, ids)
    builds_on(s, *graph.implied(s, ids), *graph.routed(s, ids), *needs.builds_on)


def applies(s: Session, needs: Needs, what: str, deciding: tuple[str, ...] = ()) -> None:
    """Skip (or fail, for a claimed feature) unless the server meets a check's needs."""
    features = [f for f in needs.features if f != "generate"]
    if "generate" in needs.features:
        need_generate(s, deciding=deciding)
    if features:
        need(s, *features, deciding=deciding)
    if needs.n is not None:
        need_n(s, needs.n, what)
    if needs.room is not None:
        need_room(s, needs.room, what)


UNCLAIMED = frozenset({"router"})
"""Features the suite cannot detect, only be told of (`--engine`): absent means not claimed."""


def need(s: Session, *names: str, deciding: tuple[str, ...] = ()) -> None:
    """Skip unless the server has these features. A claimed feature that is absent fails the
    requirement stating it (its anchor); a check `deciding` other requirements is blocked
    naming the anchor, so the report names the one thing to fix."""
    features, claims = s.features, s.config.expect
    detected = set(features.names())
    if features.generate == "broken":  # nothing can be detected; GEN-001 says why
        need_generate(s)
    root = features.generating_claim(claims)
    for name in names:
        if name in detected and name == "disabled" and root is not None:
            _claim_broken(
                s, Failure(f"generate is gated although {root!r} was claimed"), name, deciding
            )
        if name in detected:
            continue
        if name in claims:
            _claim_broken(s, ClaimedAbsent(name, features.why_not(name)), name, deciding)
        if name in UNCLAIMED:
            raise NotClaimed(f"not claimed: {features.why_not(name)}")
        raise Absent(f"not applicable: {features.why_not(name)}")


def _claim_broken(s: Session, failure: Failure, feature: str, deciding: tuple[str, ...]) -> None:
    """Fail where the feature's anchor is decided (or not in this run); block elsewhere."""
    anchor = s.features.anchor(feature, s.config.expect)
    selected = s.selected is None or anchor in s.selected
    if anchor is None or anchor in deciding or not deciding or not selected:
        raise failure
    raise Blocked(anchor, failure.message)


def need_n(s: Session, n: int, why: str) -> None:
    """Skip, naming the limit, when the server's configuration cannot take `n` choices."""
    limits = s.limits
    if limits.max_n is not None and limits.max_n < n:
        raise Limit(
            f"{why} needs n = {n}; the server takes at most n = {limits.max_n} (max_num_seqs) "
            f"[{limits.evidence.get('max_n', '')}]",
            needed_n=n,
            max_n=limits.max_n,
        )


def need_logprobs(s: Session, k: int, why: str) -> None:
    limits = s.limits
    if limits.max_logprobs is not None and limits.max_logprobs < k:
        raise Limit(
            f"{why} needs logprobs = {k}; the server allows at most {limits.max_logprobs} "
            "(max_logprobs)",
            needed_logprobs=k,
            max_logprobs=limits.max_logprobs,
        )


def need_room(s: Session, tokens: int, why: str, prompt_len: int = 4) -> None:
    room = s.limits.room(prompt_len)
    if room is not None and room < tokens:
        raise Limit(
            f"{why} needs {tokens} output tokens after a {prompt_len}-token prompt; the "
            f"server's max_model_len is {s.limits.max_model_len}",
            needed_tokens=tokens,
            prompt_tokens=prompt_len,
            max_model_len=s.limits.max_model_len,
        )


def need_generate(s: Session, judged_here: bool = False, deciding: tuple[str, ...] = ()) -> None:
    """Generate must work. A broken (hung, garbage) generate fails GEN-001 (`judged_here`);
    every other check it blocks says so, so the report names the one thing to fix."""
    features = s.features
    if features.generate == "broken":
        why = f"generate does not work: {features.why_not('scale-out')}"
        if judged_here:
            raise Failure(why)
        raise Blocked(graph.GROUND, why)
    if features.generate != "enabled":
        need(s, features.generating_claim(s.config.expect) or "scale-out", deciding=deciding)
