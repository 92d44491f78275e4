"""The policies a defect entry carries: typed values, each bending one stage's slot.

A defect that changes what the server does names, in its catalogue entry, how it bends the
slot of the stage it perturbs (`mock_server.behaviour.slots`): most set a field or two
(`Setting`), the validate stage's take rows out of its table or swap rows in (`Rows`), and the
gate's (un)guard one path whatever its prefix (`Guard`). The values are checked when the
catalogue is made, so a typo fails at import rather than leaving a defect without effect.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

from mock_server.behaviour.slots import SLOTS, Gate, Validate
from mock_server.validation import RULES


@dataclass(frozen=True, init=False)
class Setting:
    """Set `values` in `stage`'s slot: `Setting("admit", aborts_honoured=False)`."""

    stage: str
    values: tuple[tuple[str, Any], ...]

    def __init__(self, stage: str, /, **values: Any) -> None:
        if stage not in SLOTS:
            raise KeyError(stage)
        unknown = set(values) - {f.name for f in fields(SLOTS[stage])}
        if unknown:
            raise KeyError(f"{stage} has no {sorted(unknown)}")
        object.__setattr__(self, "stage", stage)
        object.__setattr__(self, "values", tuple(values.items()))

    def bend(self, slot: Any) -> Any:
        return replace(slot, **dict(self.values))


@dataclass(frozen=True)
class Rows:
    """Take rows `drop` out of the validate table and put rows `add` in (names of
    `mock_server.validation.TABLE`'s rows)."""

    drop: tuple[str, ...]
    add: tuple[str, ...] = ()
    stage: ClassVar[str] = "validate"

    def __post_init__(self) -> None:
        for row in (*self.drop, *self.add):
            if row not in RULES:
                raise KeyError(row)

    def bend(self, slot: Validate) -> Validate:
        return replace(slot, rules=slot.rules - frozenset(self.drop) | frozenset(self.add))


@dataclass(frozen=True)
class Guard:
    """Make `path` need the API key (`guarded`) or not, whatever its prefix says."""

    path: str
    guarded: bool
    stage: ClassVar[str] = "gate"

    def bend(self, slot: Gate) -> Gate:
        return replace(slot, guarded=(*slot.guarded, (self.path, self.guarded)))


Bend = Setting | Rows | Guard
