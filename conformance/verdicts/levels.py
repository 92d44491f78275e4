"""What a vendor can claim: the catalogue grouped into a Core level and extended features.

A run's verdict says whether every applicable MUST passed; a vendor also wants to say *what*
their server does ("TITO core, plus abort and text mode"). The grouping is data (`GROUPS`): each
group takes every requirement of its `Feature`s, plus the requirements it names by id (moved
out of their feature's group because they exercise this feature: a stop string needs text
mode). `tests/test_levels.py` proves every requirement lands in exactly one group.

Core is what every TITO server must do: generate with token ids in and out, the answer's shape,
streaming, stop token ids, error answers, and the rules of the mode it was started in (an API
key, `--tokens-only`, the 403 of neither flag). The rest follow the API document's sections.
`router` is a deployment profile (a router in front of engines), never part of Core: a single
server reports it `absent`. `derender-mode` and `parse-context` are what vLLM 0.33 and 0.34 add
past the document: `absent` on a server that neither shows nor claims them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from conformance.requirements import Feature, Level, Requirement, all_requirements
from conformance.verdicts.results import Report, RequirementResult, SkipKind, Status

CORE = "core"
REACHED, NOT_REACHED = "reached", "not reached"
PASSED, FAILED, INCOMPLETE, ABSENT = "passed", "failed", "incomplete", "absent"
STATES = (PASSED, FAILED, INCOMPLETE, ABSENT)
"""An extended feature's state: passed (every applicable MUST passed), failed (a MUST failed
or the harness broke on one), incomplete (a MUST was blocked, or its action could not be made
to land), absent (not detected on this server, or nothing of it applied)."""


@dataclass(frozen=True)
class Group:
    """A level (Core) or an extended feature, named as `--expect` names it where it can be."""

    name: str
    features: tuple[Feature, ...] = ()  # every requirement of these features...
    ids: tuple[str, ...] = ()  # ...and these, taken from another feature's group
    detect: str | None = None  # the detected feature that shows it is there
    reads: tuple[str, ...] = ()  # another group's requirements that judge it too, once present
    must_pass: tuple[str, ...] = ()  # passed, not merely not failed (Core: generate answers)


GROUPS: tuple[Group, ...] = (
    Group(
        CORE,
        features=(
            Feature.CORE,
            Feature.STREAMING,
            Feature.STOP,
            Feature.ERRORS,
            Feature.MULTIMODAL,
            Feature.API_KEY,
            Feature.TOKENS_ONLY,
            Feature.DISABLED,
        ),
        must_pass=("GEN-001",),
    ),
    Group(
        "abort",
        features=(Feature.ABORT,),
        ids=("STOP-005", "AUTH-002", "AUTH-003"),  # an aborted choice's stop_reason; abort's key
        detect="abort",
    ),
    Group(
        "text-mode",
        features=(Feature.TEXT,),
        ids=("STOP-006", "STOP-007", "STOP-008", "STOP-009", "STOP-010"),  # stop strings
        detect="text-mode",
    ),
    Group("logprobs", features=(Feature.LOGPROBS,)),
    Group("weight-versions", features=(Feature.WEIGHT_VERSIONS,)),
    Group("render", features=(Feature.RENDER,), detect="render"),
    Group("data-parallel", features=(Feature.DP_RANK,), detect="data-parallel"),
    # GEN-RESP-007 (Core: null without the flag) also judges the field's form with the flag on
    Group("routed-experts", reads=("GEN-RESP-007",), detect="routed-experts"),
    Group("sampling-mask", reads=("GEN-RESP-007",), detect="sampling-mask"),
    Group("router", features=(Feature.ROUTER,), detect="router"),
    # release extensions (vLLM 0.33+, not in the document): text mode's, judged where detected
    # or claimed (`checks/test_release_extensions.py`)
    Group(
        "derender-mode", ids=("EXT-DERENDER-001", "EXT-DERENDER-002"), detect="output-mode-derender"
    ),
    Group("parse-context", ids=("EXT-PARSE-001", "EXT-PARSE-002"), detect="parse-context"),
)
EXTENDED = tuple(g.name for g in GROUPS if g.name != CORE)


@cache
def members() -> dict[str, tuple[Requirement, ...]]:
    """Each group's requirements, in catalogue order."""
    moved = {rid: g.name for g in GROUPS for rid in g.ids}
    out: dict[str, list[Requirement]] = {g.name: [] for g in GROUPS}
    for req in all_requirements():
        if req.id in moved:
            out[moved[req.id]].append(req)
            continue
        for group in GROUPS:
            if req.feature in group.features:
                out[group.name].append(req)
    return {name: tuple(reqs) for name, reqs in out.items()}


def group_of(requirement_id: str) -> str:
    """The one group a requirement belongs to."""
    return next(n for n, reqs in members().items() if any(r.id == requirement_id for r in reqs))


def level_of(report: Report) -> dict[str, Any]:
    """The report's `level` object: Core reached or not, and each extended feature's state."""
    results = {r.requirement.id: r for r in report.requirements}
    detected = set(report.server.detected_features)
    present = detected | set(report.server.claimed_features)
    extended = {}
    for group in GROUPS:
        judged = [results[r.id] for r in members()[group.name] if r.id in results]
        if group.detect in present:
            judged += [results[rid] for rid in group.reads if rid in results]
        musts = [r for r in judged if r.requirement.level is Level.MUST]
        if group.name == CORE:
            core = _core(musts, [results.get(rid) for rid in group.must_pass])
        else:
            extended[group.name] = _state(musts, group.detect is None or group.detect in detected)
    return {"core": core, "extended": extended}


def _core(musts: list[RequirementResult], must_pass: list[RequirementResult | None]) -> str:
    """Reached when no Core MUST failed or errored, and generate itself answered."""
    broken = any(r.status in (Status.FAIL, Status.ERROR) for r in musts)
    served = all(r is not None and r.status is Status.PASS for r in must_pass)
    return REACHED if served and not broken else NOT_REACHED


def _state(musts: list[RequirementResult], detected: bool) -> str:
    """A failure shows whatever was detected (a claimed feature that is absent fails its
    anchor); short of one, an undetected feature is absent."""
    if any(
        r.status is Status.FAIL or (r.status is Status.ERROR and not r.inconclusive) for r in musts
    ):
        return FAILED
    if any(r.status is Status.ERROR or r.skip_kind is SkipKind.BLOCKED for r in musts):
        return INCOMPLETE
    if not detected or not any(r.status is Status.PASS for r in musts):
        return ABSENT
    return PASSED


def describe(level: Mapping[str, Any]) -> str:
    """One line for people: `core reached · passed: abort, logprobs · absent: render`."""
    extended = level.get("extended") or {}
    parts = [f"core {level.get('core', 'unknown')}"]
    for state in (*STATES, *sorted(set(extended.values()) - set(STATES))):
        names = [name for name, s in extended.items() if s == state]
        if names:
            parts.append(f"{state}: {', '.join(names)}")
    return " · ".join(parts)
