"""The requirement catalogue: one module per area of the API document, and one for what later
vLLM releases add (`releases`), joined here."""

from __future__ import annotations

from functools import cache

from conformance.requirements import (
    abort,
    access,
    core,
    errors,
    gating,
    logprobs,
    pipeline,
    releases,
    router,
    stop,
    streaming,
    text_mode,
    weight_versions,
)
from conformance.requirements.model import MAY, MUST, SHOULD, Feature, Level, Requirement, Source

__all__ = [
    "MAY",
    "MUST",
    "SHOULD",
    "Feature",
    "Level",
    "Requirement",
    "Source",
    "CHECKS_PACKAGE",
    "all_requirements",
    "by_id",
]

CHECKS_PACKAGE = "conformance.checks"
"""Where the check modules are (`conformance.registry` reads their checks)."""

_MODULES = (
    core,
    streaming,
    logprobs,
    text_mode,
    stop,
    abort,
    access,
    weight_versions,
    pipeline,
    gating,
    errors,
    router,
    releases,
)


@cache
def all_requirements() -> tuple[Requirement, ...]:
    """Every requirement, in catalogue order. IDs are unique (a test proves it)."""
    return tuple(req for module in _MODULES for req in module.REQUIREMENTS)


@cache
def by_id() -> dict[str, Requirement]:
    """The catalogue keyed by requirement ID."""
    return {req.id: req for req in all_requirements()}
