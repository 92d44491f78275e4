"""The defects that must fail each requirement, read from the installed defect catalogues.

A defect catalogue (the mock's: `mock_server.behaviour.defects`) names, per defect, the
requirements it must fail. That link is kept there and only there: the suite reads it through
the `tito_conformance.defects` entry points (never importing the mock), and
`Requirement.defects` is this module's lookup by requirement ID. With no catalogue installed
every requirement has none, and the notes say why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points

DEFECTS_GROUP = "tito_conformance.defects"
"""Entry points naming a callable (or a value) of `(defect name, requirement IDs)` pairs."""


@dataclass(frozen=True)
class Catalogues:
    """Every installed catalogue's `(defect name, requirement IDs)` pairs, and notes on what
    would not load (a missing or broken catalogue empties the link, it does not break the run)."""

    pairs: tuple[tuple[str, tuple[str, ...]], ...]
    notes: tuple[str, ...] = ()

    def unknown(self, known: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Defect -> the IDs it names that are not in `known` (a typo, or a retired ID)."""
        ids = set(known)
        found = {name: tuple(r for r in rids if r not in ids) for name, rids in self.pairs}
        return {name: rids for name, rids in found.items() if rids}


@cache
def installed() -> Catalogues:
    """The installed catalogues, read once per process."""
    pairs: list[tuple[str, tuple[str, ...]]] = []
    notes: list[str] = []
    found = list(entry_points(group=DEFECTS_GROUP))
    if not found:
        notes.append(f"no defect catalogue installed (entry-point group {DEFECTS_GROUP})")
    for ep in found:
        try:
            loaded = ep.load()
            given = loaded() if callable(loaded) else loaded
            pairs.extend((str(name), tuple(str(r) for r in ids)) for name, ids in given)
        except Exception as exc:  # a broken plug-in is reported, not fatal
            notes.append(f"defect catalogue {ep.name!r} unavailable: {type(exc).__name__}: {exc}")
    return Catalogues(tuple(pairs), tuple(notes))


@cache
def _by_requirement() -> dict[str, tuple[str, ...]]:
    found: dict[str, dict[str, None]] = {}
    for name, ids in installed().pairs:
        for rid in ids:
            found.setdefault(rid, {})[name] = None
    return {rid: tuple(names) for rid, names in found.items()}


def defects_of(requirement_id: str) -> tuple[str, ...]:
    """The defects that must fail `requirement_id`, in their catalogue's order."""
    return _by_requirement().get(requirement_id, ())


def forget() -> None:
    """Read the entry points again on the next lookup (tests that install a catalogue)."""
    installed.cache_clear()
    _by_requirement.cache_clear()
