"""The registry of behaviour defects: one policy per defect, filed under the stage it bends.

The mock serves a request in stages (`STAGES`); each stage reads its behaviour from one slot
of a `Policies` value (`mock_server.behaviour.policies.slots`), made once per configuration.
A correct mock gets the default slots; a defect that changes what the server does registers here a
policy, a function from its stage's default slot to the bent one. The code of a stage reads
only its slot and never asks which defect is on, so a defect run takes the same code, fast
paths included, as a clean run, except where its own slot says otherwise.

Defects that only rewrite a finished answer are transformers (`mock_server.transforms`),
applied by the build, frame and write stages; `registrations` lists both kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace
from functools import lru_cache
from typing import Any, TypeVar

from mock_server.behaviour.defects import DEFECTS
from mock_server.behaviour.policies.slots import STAGES, Policies

S = TypeVar("S")
Policy = Callable[[Any], Any]
_POLICIES: dict[str, tuple[str, Policy]] = {}
_ORDER = {name: i for i, name in enumerate(DEFECTS)}


def policy(name: str, stage: str) -> Callable[[Callable[[S], S]], Callable[[S], S]]:
    """Register `fn(slot) -> slot` as defect `name`'s policy for `stage` (one per defect)."""
    if name not in DEFECTS:  # a typo must not silently leave a defect without effect
        raise KeyError(name)
    if stage not in STAGES:
        raise KeyError(stage)

    def register(fn: Callable[[S], S]) -> Callable[[S], S]:
        if name in _POLICIES:
            raise ValueError(f"{name} already has a policy")
        _POLICIES[name] = (stage, fn)
        return fn

    return register


def setting(name: str, stage: str, **values: Any) -> None:
    """Register defect `name` as a policy that only sets `values` in `stage`'s slot."""

    def bend(slot: Any) -> Any:
        return replace(slot, **values)

    bend.__name__ = bend.__qualname__ = name.replace("-", "_")
    policy(name, stage)(bend)


def registered() -> dict[str, str]:
    """Defect name -> the stage its policy is filed under (tests read it)."""
    return {name: stage for name, (stage, _) in _POLICIES.items()}


@lru_cache(maxsize=64)
def build(defects: frozenset[str]) -> Policies:
    """The slots `defects` make: each stage's default, bent by its policies in catalogue
    order. Made once per configuration (`MockConfig.policies`)."""
    slots = {f.name: getattr(Policies(), f.name) for f in fields(Policies) if f.init}
    for name in sorted(defects & _POLICIES.keys(), key=_ORDER.__getitem__):
        stage, fn = _POLICIES[name]
        slots[stage] = fn(slots[stage])
    return Policies(**slots)
