"""Whole bodies against the spec: their own requirements, one per operation and mode.

Every other check reads only the fields of its requirement, so a server that gets one field
wrong fails that requirement and these, not every check that saw the body. These run after the
others and judge every generate body and stream event the run received (or, run alone, a few
of their own), each problem at its deepest path with the expected and the actual value.
"""

from __future__ import annotations

from typing import Any

from conformance import api
from conformance.registry import checks
from conformance.semantics import fail
from conformance.session import Session

SHOWN = 5


def _judge(s: Session, schema: str, own: list[tuple[str, Any]]) -> None:
    bodies = s.observed.get(schema) or own
    problems: list[str] = []
    bad = 0
    for what, body in bodies:
        found = api.schema_problems(schema, body, limit=2)
        if found:
            bad += 1
            if len(problems) < SHOWN:
                problems.append(f"{what}: {'; '.join(found)}")
    if problems:
        fail(f"{bad} of {len(bodies)} bodies do not match {schema}: " + " | ".join(problems))


@checks("SCHEMA-GEN-001", after_all=True, needs=("generate",))
def test_generate_responses_match_schema(tito: Session) -> None:
    own: list[tuple[str, Any]] = []
    if not tito.observed.get("GenerateResponse"):
        for what, payload in (
            ("minimal generate", api.body(4)),
            ("generate with logprobs 1", api.body(4, logprobs=1)),
        ):
            own.append((what, api.generate(tito, payload, what=what)))
    _judge(tito, "GenerateResponse", own)


@checks("SCHEMA-STREAM-001", after_all=True, needs=("generate",))
def test_stream_events_match_schema(tito: Session) -> None:
    if not tito.observed.get("GenerateStreamPayload"):
        api.stream(tito, api.body(4, logprobs=1), what="minimal stream")
    _judge(tito, "GenerateStreamPayload", [])
