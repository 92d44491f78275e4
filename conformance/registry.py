"""Which check decides which requirements.

`@checks("GEN-REQ-002")` tags a pytest check with the requirement IDs it decides. The requirements
themselves are declared beside their checks (each check module's `REQUIREMENTS`), so tagging a
check reads nothing of the catalogue: the IDs are checked when the checks are read (`all_checks`,
`needs_of`), and an unknown one is an error then, so a typo can never leave a requirement
silently unchecked; the kit's own tests prove the other direction (every requirement has a check).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from conformance.requirements import by_id, check_modules

F = TypeVar("F", bound=Callable[..., Any])
ATTRIBUTE = "__tito_requirements__"
LAST = "__tito_last__"
NEEDS = "__tito_needs__"
_REGISTRY: dict[str, tuple[str, ...]] = {}
_GROUNDS: dict[str, tuple[str, ...]] = {}
_BUILDS_ON: dict[str, tuple[str, ...]] = {}


@dataclass(frozen=True)
class Needs:
    """What a check needs from the server, decided by the collector before the check runs (as
    Gateway API tests declare `Features`): detected features ("generate" = a working generate),
    limits (`n` choices, `room` output tokens after the usual prompt), and the requirements whose
    behaviour the check's evidence rests on (`builds_on`: when one of those is broken, the check
    is blocked naming it, so one defect fails one requirement)."""

    features: tuple[str, ...] = ()
    n: int | None = None
    room: int | None = None
    builds_on: tuple[str, ...] = ()


def checks(
    *requirement_ids: str,
    needs: tuple[str, ...] = (),
    n: int | None = None,
    room: int | None = None,
    builds_on: tuple[str, ...] = (),
    last: bool = False,
    after_all: bool = False,
) -> Callable[[F], F]:
    """Mark a check as deciding `requirement_ids`, needing what those requirements need
    (`Requirement.needs`, merged in when first read: `needs_of`) plus its own `needs`
    (features), `n`, `room`, and the requirements it `builds_on`.

    `after_all` checks judge what the others received (they run after them); `last` checks may
    take the server down, so they run after everything else."""
    if not requirement_ids:
        raise ValueError("a check must name at least one requirement")

    def mark(fn: F) -> F:
        setattr(fn, ATTRIBUTE, tuple(requirement_ids))
        setattr(fn, NEEDS, Needs(tuple(dict.fromkeys(needs)), n, room, tuple(builds_on)))
        setattr(fn, LAST, 2 if last else 1 if after_all else 0)
        _REGISTRY[f"{fn.__module__}.{fn.__qualname__}"] = tuple(requirement_ids)
        _BUILDS_ON[f"{fn.__module__}.{fn.__qualname__}"] = tuple(builds_on)
        for rid in requirement_ids:
            _GROUNDS[rid] = tuple(dict.fromkeys((*_GROUNDS.get(rid, ()), *builds_on)))
        return fn

    return mark


def requirements_of(fn: object) -> tuple[str, ...]:
    """The requirement IDs a collected check decides (empty if it is not a check)."""
    ids = getattr(fn, ATTRIBUTE, ())
    return tuple(ids) if isinstance(ids, tuple) else ()


def known(requirement_ids: tuple[str, ...], where: str = "") -> tuple[str, ...]:
    """`requirement_ids`, each checked against the catalogue (ValueError naming the unknown)."""
    unknown = [rid for rid in requirement_ids if rid not in by_id()]
    if unknown:
        raise ValueError(f"unknown requirement id(s){where}: {', '.join(unknown)}")
    return requirement_ids


def needs_of(fn: object) -> Needs:
    """What a check needs: its requirements' `needs`, then its own (an unknown ID is an error)."""
    own = getattr(fn, NEEDS, None)
    if not isinstance(own, Needs):
        return Needs()
    ids = requirements_of(fn)
    known((*ids, *own.builds_on), f" in {getattr(fn, '__qualname__', fn)}")
    wanted = (*(f for rid in ids for f in by_id()[rid].needs), *own.features)
    return replace(own, features=tuple(dict.fromkeys(wanted)))


def runs_last(fn: object) -> int:
    """The check's place in the run: 0 first, 1 after those, 2 at the very end."""
    return int(getattr(fn, LAST, 0))


def grounds_of(rid: str) -> tuple[str, ...]:
    """What the checks of `rid` build on (every check module imported first: a worker runs
    only some of them)."""
    all_checks()
    return _GROUNDS.get(rid, ())


def all_checks() -> dict[str, tuple[str, ...]]:
    """Import every check module and return check name -> requirement IDs, each ID (and each
    it builds on) known to the catalogue.

    The check modules are loaded by name as plugins (`requirements.check_modules`, which
    the catalogue's loader reads too): they sit above the registry (each imports it to tag its
    checks), so the registry never imports them as a module would."""
    check_modules()  # importing them fills the registry
    for name, ids in _REGISTRY.items():
        known((*ids, *_BUILDS_ON[name]), f" in {name}")
    return dict(_REGISTRY)
