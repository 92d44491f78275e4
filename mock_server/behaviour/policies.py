"""The stages' slots as the defects that are on bend them, made once per configuration.

The mock serves a request in stages (`STAGES`); each stage reads its behaviour from one slot
of a `Policies` value (`mock_server.behaviour.slots`). A correct mock gets the default slots;
a defect that changes what the server does carries in its catalogue entry a policy
(`mock_server.behaviour.bends`) that bends its stage's slot. The code of a stage reads only
its slot and never asks which defect is on, so a defect run takes the same code, fast paths
included, as a clean run, except where its own slot says otherwise.

Defects that only rewrite a finished answer are transformers (`mock_server.transforms`),
applied by the build, frame and write stages.
"""

from __future__ import annotations

from dataclasses import fields
from functools import lru_cache

from mock_server.behaviour.defects import DEFECTS
from mock_server.behaviour.slots import STAGES, Policies

__all__ = ["STAGES", "Policies", "build", "registered"]


def registered() -> dict[str, str]:
    """Defect name -> the stage its policy bends (tests read it)."""
    return {name: d.policy.stage for name, d in DEFECTS.items() if d.policy is not None}


@lru_cache(maxsize=64)
def build(defects: frozenset[str]) -> Policies:
    """The slots `defects` make: each stage's default, bent by their policies in catalogue
    order. Made once per configuration (`MockConfig.policies`)."""
    slots = {f.name: getattr(Policies(), f.name) for f in fields(Policies) if f.init}
    for d in DEFECTS.values():
        if d.name in defects and d.policy is not None:
            slots[d.policy.stage] = d.policy.bend(slots[d.policy.stage])
    return Policies(**slots)
