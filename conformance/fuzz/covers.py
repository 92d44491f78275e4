"""The requirement IDs a fuzz failure can be filed under, stated as data.

`findings.requirements_for` files a single case's failure and the stateful sequences file theirs
under `run.SEQUENCE_COVERS`; both are code paths, so the coverage matrix (`tito-conformance
requirements --coverage`) reads this set instead of running them. A test proves the set is
exactly what those paths can return, so it cannot drift from them.
"""

from __future__ import annotations

FUZZ_COVERS: frozenset[str] = frozenset(
    {
        # single cases (`requirements_for`): errors, media type, out-of-vocabulary ids
        "ERR-002",
        "ERR-003",
        "ERR-004",
        "ERR-005",
        "ERR-006",
        "ERR-007",
        "ERR-008",
        # ... access and gating
        "AUTH-001",
        "AUTH-004",
        "DISABLED-001",
        "DISABLED-002",
        "DISABLED-003",
        "DISABLED-004",
        # ... the answer of each operation
        "GEN-001",
        "GEN-REQ-012",
        "GEN-RESP-004",
        "SCHEMA-GEN-001",
        "SCHEMA-STREAM-001",
        "STREAM-001",
        "STREAM-002",
        "ABORT-006",
        "ABORT-007",
        "RENDER-001",
        "WV-007",
        "WV-008",
        # stateful sequences (`SEQUENCE_COVERS`)
        "ABORT-002",
        "WV-002",
        "RENDER-002",
    }
)
"""Every requirement ID a fuzz finding can name."""
