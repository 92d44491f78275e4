"""The requirement IDs a fuzz finding can be filed under, read from the catalogue.

Each requirement declares the fuzz findings it takes (`Requirement.fuzz`, which
`findings.requirements_for` matches) and the stateful sequences that exercise it
(`Requirement.sequences`), so the coverage matrix (`tito-conformance requirements --coverage`)
reads the catalogue instead of running the fuzzer.
"""

from __future__ import annotations

from functools import cache

from conformance.requirements import all_requirements


@cache
def fuzz_covers() -> frozenset[str]:
    """Every requirement ID a fuzz finding can name (read when first asked, never at import)."""
    return frozenset(r.id for r in all_requirements() if r.fuzz or r.sequences)


def sequence_covers() -> dict[str, set[str]]:
    """Stateful sequence name -> the requirements it exercises (its failures file under them)."""
    covers: dict[str, set[str]] = {}
    for r in all_requirements():
        for sequence in r.sequences:
            covers.setdefault(sequence, set()).add(r.id)
    return covers
