"""Every outcome a check can reach, as values: no verdict is written into message text or read
back out of it.

A check passes by returning. Otherwise it raises one of these (an `assert` is a `Failure` with
only a message). The grounds room (`conformance.grounds`) is the one place that turns what a
check raised into a status: `gate` before the check runs (skip, blocked, a claimed feature
absent), `verdict.decide` after. Messages are for people; the kind, the requirement a check is
blocked by and a limit's measured values are fields.

The skips subclass pytest's own skip, and the failures `AssertionError`, so pytest shows them
as it shows any skip or failed assertion, and code that handles those (a foundation probe
that cannot run) handles these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import pytest


class Status(StrEnum):
    """Per check and per requirement. Skip never counts as pass; WARN is a failed SHOULD or
    MAY (reported, never failing the run)."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIP = "skip"
    ERROR = "error"  # the harness itself broke, or (inconclusive) the action could not land


class SkipKind(StrEnum):
    """Why a requirement was not exercised: reported apart, since only one is the server's gap."""

    NONE = ""
    ABSENT = "absent"  # the feature is detected absent on this server (or not applicable)
    NOT_CLAIMED = "not-claimed"  # only a claim (--expect) can bring it in, and none was made
    LIMIT = "limit"  # the server's configuration (max_num_seqs, max_logprobs, context) forbids it
    BLOCKED = "blocked"  # a requirement it builds on fails (named in `blocked_by`)


class Skip(pytest.skip.Exception):  # type: ignore[name-defined]
    """The check did not judge its requirement; `kind` says why, `reason` says it to people."""

    kind = SkipKind.ABSENT

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    @property
    def blocked_by(self) -> str:
        return ""

    @property
    def measured(self) -> Mapping[str, Any]:
        return {}


class Absent(Skip):
    """The feature the check needs is detected absent (a claimed one fails instead)."""

    kind = SkipKind.ABSENT


class NotClaimed(Skip):
    """What the check needs cannot be detected, only claimed, and the vendor did not claim it."""

    kind = SkipKind.NOT_CLAIMED


class Limit(Skip):
    """The server's configuration cannot exercise the check: `measured` holds the numbers the
    run measured (the limit, what the check needs, the times that put an action out of reach)."""

    kind = SkipKind.LIMIT

    def __init__(self, reason: str, **measured: Any) -> None:
        super().__init__(reason)
        self._measured = dict(measured)

    @property
    def measured(self) -> Mapping[str, Any]:
        return self._measured


class Blocked(Skip):
    """Unjudgeable: a requirement the check builds on fails on this server, and `by` names it.
    Exactly that requirement fails; its dependents report `skip: blocked by <by>`."""

    kind = SkipKind.BLOCKED

    def __init__(self, by: str, why: str) -> None:
        super().__init__(f"blocked by {by}: {why}")
        self.by = by
        self.why = why

    @property
    def blocked_by(self) -> str:
        return self.by


class Failure(AssertionError):
    """The server broke the check's requirement. `evidence` is the field-level fact, when the
    check has one apart from its message; `reproducer`, when the check knows better than the
    last exchange what reproduces it (an action in flight: a script, not one curl)."""

    def __init__(self, message: str, *, evidence: str = "", reproducer: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.evidence = evidence
        self.reproducer = reproducer


class ClaimedAbsent(Failure):
    """A feature claimed with --expect is not there: the requirement that anchors it fails."""

    def __init__(self, feature: str, why: str) -> None:
        super().__init__(f"claimed feature {feature!r} (--expect) was not detected: {why}")
        self.feature = feature


class Inconclusive(Exception):  # noqa: N818 - a verdict, not a failure of the server
    """The check could not exercise its requirement on this server: an error, never a fail."""


class OutOfReach(Inconclusive):
    """No plan could make the action provably overlap the request (the whole request ends
    faster than one round trip): a skip of kind `limit` naming the measured times."""

    def __init__(self, message: str, **measured: Any) -> None:
        super().__init__(message)
        self.measured: Mapping[str, Any] = dict(measured)


@dataclass(frozen=True)
class Outcome:
    """What one check came to: its status, with the fields every report shows. Made by
    `conformance.grounds.verdict.decide` and nowhere else (a report builds on these)."""

    status: Status
    message: str = ""
    skip_kind: SkipKind = SkipKind.NONE
    blocked_by: str = ""
    measured: Mapping[str, Any] = field(default_factory=dict)
    inconclusive: bool = False
    reproducer: str = ""
