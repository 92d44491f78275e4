"""Which requirement a malformed answer is charged to.

The SCHEMA-* requirements judge every body against the spec's schema. A field some other
requirement governs (`Requirement.fields`) is charged to that requirement when it failed in
this run: the SCHEMA-* check then leaves it out, and is blocked naming it when nothing else is
malformed, so one wrong field fails one requirement. Checks that tripped over a malformed
field they do not govern are blocked naming SCHEMA-* (`collector.Collector`).
"""

from __future__ import annotations

from typing import Any

from conformance.api import Leaf, schema_leaves
from conformance.requirements import by_id


def charged(leaf: Leaf, failing: set[str]) -> str | None:
    """The failing requirement that governs this malformed field, if any."""
    for rid in sorted(failing):
        if leaf.keys & set(by_id()[rid].fields):
            return rid
    return None


def uncharged(
    schema: str, body: Any, failing: set[str], limit: int = 2
) -> tuple[list[str], set[str]]:
    """The body's problems no failing requirement governs, and the requirements charged with
    the rest."""
    problems: list[str] = []
    owners: set[str] = set()
    for leaf in schema_leaves(schema, body, limit=5):
        owner = charged(leaf, failing)
        if owner is None:
            if len(problems) < limit:
                problems.append(leaf.text)
        else:
            owners.add(owner)
    return problems, owners
