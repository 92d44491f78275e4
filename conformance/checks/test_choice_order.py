"""The order of a non-streamed answer's choices: a rollout worker zips them by position."""

from __future__ import annotations

from conformance import api
from conformance.registry import checks
from conformance.requirements.model import SHOULD, Feature, Requirement, Source
from conformance.session import Session
from conformance.tito.semantics import choices_of, fail
from conformance.tito.streamed import index_of

REQUIREMENTS = [
    Requirement(
        "GEN-RESP-008",
        SHOULD,
        Feature.CORE,
        "A non-streamed answer lists its choices in index order (choices[i].index == i).",
        "a non-streamed answer lists its n choices in index order",
        source=Source.VLLM,
        evidence="capture n2 (n 2: choices with index 0, then 1)",
        needs=("generate",),
        fields=("index",),
    ),
]


@checks("GEN-RESP-008", n=3, builds_on=("GEN-REQ-008",))
def test_choices_in_index_order(tito: Session) -> None:
    data = api.generate(tito, api.seeded(4, n=3), what="n 3")
    listed = [index_of(c.get("index", -1)) for c in choices_of(data)]
    if listed != sorted(listed):
        fail(f"n=3 listed its choices with indexes {listed}, not in index order")
