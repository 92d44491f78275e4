"""Which ways the kit has to make each requirement FAIL (`tito-conformance requirements
--coverage`).

A requirement nothing can fail is a hole the pass counts hide: a server could break it and every
run would still be green. The matrix puts the four ways side by side, per requirement:

- suite: the pytest checks tagged `@checks(ID)` (the registry, filled by importing the checks);
- fuzz: whether a fuzz finding can be filed under the ID (the requirement's `fuzz` rules and
  `sequences`);
- diff: the diff corpus cases the requirement governs (`Requirement.diff`);
- defect: the defects of a defect catalogue that declare the ID, read through the
  `tito_conformance.defects` entry points (the mock's: the suite never imports the mock). The
  link lives there only: `Requirement.defects` is the same lookup, and an ID a catalogue names
  that the catalogue of requirements lacks is a note.

The matrix is data (`Coverage`); the text and JSON are views of it, and the exit code is 1 when
a MUST requirement has no way to fail at all.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.requirements import Level, Requirement, all_requirements
from conformance.requirements.defects import installed

COLUMNS = ("suite", "fuzz", "diff", "defect")
CHECK_MARK = "✓"


@dataclass(frozen=True)
class Row:
    """One requirement and how many ways of each column can fail it (fuzz is 0 or 1)."""

    id: str
    level: Level
    counts: Mapping[str, int]

    @property
    def ways(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class Coverage:
    """The whole matrix, in catalogue order, with what the sources said that does not fit it
    (an unknown ID, a catalogue that would not load)."""

    rows: tuple[Row, ...]
    notes: tuple[str, ...] = ()

    def without_ways(self, level: Level | None = None) -> list[str]:
        """IDs no column can fail (of `level` only, when given)."""
        return [r.id for r in self.rows if not r.ways and (level is None or r.level is level)]


def build(
    requirements: Iterable[Requirement],
    suite: Mapping[str, int],
    fuzz: Iterable[str],
    diff: Mapping[str, int],
    defect: Mapping[str, int],
    notes: Iterable[str] = (),
) -> Coverage:
    """The matrix from each column's data (pure: the tests hand it a synthetic catalogue)."""
    reqs = tuple(requirements)
    fuzzed = frozenset(fuzz)
    known = {r.id for r in reqs}
    extra = list(notes)
    for column, ids in (("suite", suite), ("fuzz", fuzzed), ("diff", diff), ("defect", defect)):
        unknown = sorted(set(ids) - known)
        if unknown:
            extra.append(f"{column} names unknown requirement(s): {', '.join(unknown)}")
    rows = tuple(
        Row(
            r.id,
            r.level,
            {
                "suite": suite.get(r.id, 0),
                "fuzz": int(r.id in fuzzed),
                "diff": diff.get(r.id, 0),
                "defect": defect.get(r.id, 0),
            },
        )
        for r in reqs
    )
    return Coverage(rows, tuple(extra))


def suite_counts() -> Counter[str]:
    """Checks per requirement ID, from the registry (importing the checks fills it)."""
    from conformance.registry import all_checks

    return Counter(rid for ids in all_checks().values() for rid in set(ids))


def fuzz_ids() -> frozenset[str]:
    from conformance.fuzz.covers import fuzz_covers

    return fuzz_covers()


def diff_counts() -> Counter[str]:
    """Diff cases per requirement ID, as each requirement declares them."""
    return Counter({r.id: len(r.diff) for r in all_requirements() if r.diff})


def defect_counts() -> tuple[Counter[str], list[str]]:
    """Defects per requirement ID over every installed defect catalogue, and notes on those
    that would not load (a missing catalogue empties the column, it does not break the run)."""
    catalogues = installed()
    counts = Counter(rid for _name, ids in catalogues.pairs for rid in set(ids))
    return counts, list(catalogues.notes)


def collect() -> Coverage:
    """The kit's matrix today, from the catalogue and the four sources."""
    defects, notes = defect_counts()
    return build(all_requirements(), suite_counts(), fuzz_ids(), diff_counts(), defects, notes)


def _cell(column: str, count: int) -> str:
    if not count:
        return "-"
    return CHECK_MARK if column == "fuzz" else str(count)


def render(coverage: Coverage) -> str:
    """One line per requirement (ID, level, a count per column; `-` for none), the notes, and
    a summary line."""
    width = max((len(r.id) for r in coverage.rows), default=0)
    lines = [
        f"{r.id:<{width}}  {r.level.value:<6}  "
        + "  ".join(f"{c} {_cell(c, r.counts[c]):<2}" for c in COLUMNS).rstrip()
        for r in coverage.rows
    ]
    lines += [f"note: {note}" for note in coverage.notes]
    musts = [r for r in coverage.rows if r.level is Level.MUST]
    bare_musts = coverage.without_ways(Level.MUST)
    lines.append(
        f"coverage: {len(musts) - len(bare_musts)}/{len(musts)} MUST requirements have a way "
        f"to fail; {len(coverage.without_ways())} of {len(coverage.rows)} requirements have none"
    )
    if bare_musts:
        lines.append(f"MUST without a way to fail: {', '.join(bare_musts)}")
    return "\n".join(lines)


def as_json(coverage: Coverage) -> dict[str, Any]:
    """The matrix as plain data (`--coverage --json`)."""
    return {
        "columns": list(COLUMNS),
        "requirements": [
            {"id": r.id, "level": r.level.value, **dict(r.counts)} for r in coverage.rows
        ],
        "must_without_way_to_fail": coverage.without_ways(Level.MUST),
        "without_way_to_fail": coverage.without_ways(),
        "notes": list(coverage.notes),
    }


def exit_code(coverage: Coverage) -> int:
    """1 when a MUST requirement has no way to fail, else 0."""
    return 1 if coverage.without_ways(Level.MUST) else 0


def main(as_json_output: bool = False) -> int:
    """Print the kit's matrix (text or JSON) and return the exit code."""
    import json

    coverage = collect()
    text = json.dumps(as_json(coverage), indent=2) if as_json_output else render(coverage)
    sys.stdout.write(text + "\n")
    return exit_code(coverage)
