"""The requirement catalogue: what a requirement is (`model`), the defects that must fail each
(`defects`, read from the defect catalogues), and the loader that joins them.

Each requirement is declared once, beside its check: in the `REQUIREMENTS` list at the top of
the check module whose checks decide it (`conformance/checks/test_<area>.py`; one decided by
checks of several modules sits with its main check). The loader imports the check modules by
name, as `conformance.registry` does (they sit above this room), when the catalogue is first
asked for, never at import: so nothing the check modules import may read the catalogue at
import time (tests/test_catalogue_loading.py), and a loader re-entered mid-import says so.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType

from conformance.requirements.model import MAY, MUST, SHOULD, Feature, Level, Requirement, Source

__all__ = [
    "CHECKS_PACKAGE",
    "MAY",
    "MUST",
    "SECTIONS",
    "SHOULD",
    "Feature",
    "Level",
    "Requirement",
    "Source",
    "all_requirements",
    "by_id",
    "check_modules",
]

CHECKS_PACKAGE = "conformance.checks"
"""Where the check modules are: each declares its `REQUIREMENTS` and tags its checks."""
SECTIONS = (
    "GEN",
    "GEN-REQ",
    "GEN-RESP",
    "SCHEMA-GEN",
    "STREAM",
    "SCHEMA-STREAM",
    "LOGP",
    "TEXT",
    "STOP",
    "ABORT",
    "AUTH",
    "DP",
    "WV",
    "RENDER",
    "MM",
    "DISABLED",
    "TOKONLY",
    "ERR",
    "ROUTER",
    "EXT-DERENDER",
    "EXT-PARSE",
    "LOAD",
)
"""The catalogue's order: its sections (an ID without its number, `GEN-REQ` of `GEN-REQ-002`)
as the API document takes them up, and the report and the docs list them; within a section,
by number. A section not listed here follows these, in the order its check module is read."""
_loading = False


def check_modules() -> tuple[ModuleType, ...]:
    """Every check module, imported by name (in file-name order)."""
    package = importlib.import_module(CHECKS_PACKAGE)
    names = [i.name for i in pkgutil.iter_modules(package.__path__) if i.name.startswith("test_")]
    return tuple(importlib.import_module(f"{CHECKS_PACKAGE}.{name}") for name in names)


def _declared(module: ModuleType) -> list[Requirement]:
    found = getattr(module, "REQUIREMENTS", None)
    if not isinstance(found, list):
        raise ImportError(
            f"{module.__name__} has no REQUIREMENTS list: every check module declares one (empty"
            " if its checks judge only others' requirements), or it is still being imported and"
            " a module it imports read the catalogue at import time"
        )
    return found


def _place(requirement_id: str) -> tuple[str, int]:
    section, _, number = requirement_id.rpartition("-")
    if not section or not number.isdigit():
        raise ValueError(f"requirement ID {requirement_id!r} is not SECTION-NNN")
    return section, int(number)


@cache
def all_requirements() -> tuple[Requirement, ...]:
    """Every requirement, in catalogue order (`SECTIONS`). IDs are unique (a test proves it)."""
    global _loading
    if _loading:
        raise RuntimeError(
            "the requirement catalogue was read while it was being loaded: a module the check"
            " modules import reads it at import time (read it in a function instead)"
        )
    _loading = True
    try:
        found = [req for module in check_modules() for req in _declared(module)]
    finally:
        _loading = False
    sections = list(dict.fromkeys((*SECTIONS, *(_place(r.id)[0] for r in found))))

    def key(req: Requirement) -> tuple[int, int]:
        section, number = _place(req.id)
        return sections.index(section), number

    return tuple(sorted(found, key=key))


@cache
def by_id() -> dict[str, Requirement]:
    """The catalogue keyed by requirement ID."""
    return {req.id: req for req in all_requirements()}
