"""Whole bodies against the spec: their own requirements, one per operation and mode.

Every other check reads only the fields of its requirement, so a server that gets one field
wrong fails that requirement and these, not every check that saw the body. These run after the
others and judge every generate body and stream event the run received, plus a few of their
own in every mode (so a run cut to a few requirements judges the same ground), each problem at
its deepest path with the expected and the actual value.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from conformance import api
from conformance.grounds.graph import UNREADABLE_ERRORS
from conformance.outcomes import Blocked
from conformance.registry import checks
from conformance.requirements.model import MUST, Feature, Requirement, fuzz
from conformance.session import MEDIA, Session
from conformance.tito.semantics import fail
from conformance.verdicts.form import uncharged

REQUIREMENTS = [
    Requirement(
        "SCHEMA-GEN-001",
        MUST,
        Feature.CORE,
        "The top level adds request_id, usage, prompt_token_ids and prompt_logprobs.",
        "every non-streamed generate response is valid against the spec's GenerateResponse",
        needs=("generate",),
        fuzz=(
            fuzz(
                50, checks=("response_schema_conformance",), operations=("generate",), stream=False
            ),
        ),
        diff=("basic",),
    ),
    Requirement(
        "SCHEMA-STREAM-001",
        MUST,
        Feature.STREAMING,
        "Stream chunks carry the same per-choice fields for the new tokens.",
        "every stream event is valid against the spec's GenerateStreamPayload",
        needs=("generate",),
        fuzz=(
            fuzz(
                50, checks=("response_schema_conformance",), operations=("generate",), stream=True
            ),
            fuzz(60, checks=("stream_chunks_valid",)),
        ),
    ),
]

SHOWN = 5


def _judge(s: Session, schema: str) -> None:
    bodies = s.judged(schema)
    problems: list[str] = []
    owners: set[str] = set()
    bad = 0
    for what, body in bodies:
        found, charged = uncharged(schema, body, s.failing)
        owners |= charged
        if found:
            bad += 1
            if len(problems) < SHOWN:
                problems.append(f"{what}: {'; '.join(found)}")
    if problems:
        fail(f"{bad} of {len(bodies)} bodies do not match {schema}: " + " | ".join(problems))
    if owners:  # malformed only where a failing requirement speaks: charged to it, not here
        first, *others = sorted(owners)
        also = f" (and {', '.join(others)})" if others else ""
        raise Blocked(first, f"malformed only in fields they govern{also}")


ABORT_EARLY = {"X-Mock-Abort-After-Tokens": "2"}  # a mock's aborted answer; others ignore it


def _own(s: Session) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """A few requests of every mode (and, on the mock, an aborted one), so these judge the
    same ground however the run was cut."""
    n, k = s.limits.n(2), s.limits.logprobs(1)
    found = [
        ("minimal generate", api.body(4), {}),
        (f"generate with n {n} and logprobs {k}", api.seeded(4, n=n, logprobs=k), {}),
        ("generate aborted after 2 tokens", api.body(6, ignore_eos=True), ABORT_EARLY),
    ]
    if "text-mode" in s.features.names():
        text = api.body(4, logprobs=k, top={"output_mode": "text"})
        found.append(("text-mode generate", text, {}))
    return found


def _send_own(
    s: Session, send: Callable[[str, dict[str, Any], dict[str, str]], object], schema: str
) -> None:
    """`send` each of `_own`'s requests: all at once when the server runs them side by side
    (they are independent; on a slow server their waits overlap), else one after the other.
    The first failure in their order is the check's, as if they had gone one by one. An answer
    that could not even be read (a string where a list belongs) is judged against `schema` at
    its leaf first: its form is what these checks judge."""
    own = _own(s)
    seqs = sum(payload["sampling_params"].get("n", 1) for _, payload, _ in own)
    lanes = len(own) if s.limits.max_n is None or s.limits.max_n >= seqs else 1
    with ThreadPoolExecutor(lanes) as pool:
        sent = [pool.submit(send, what, payload, headers) for what, payload, headers in own]
    try:
        for future in sent:
            future.result()
    except UNREADABLE_ERRORS:
        _judge(s, schema)
        raise


@checks("SCHEMA-GEN-001", after_all=True)
def test_generate_responses_match_schema(tito: Session) -> None:
    def send(what: str, payload: dict[str, Any], headers: dict[str, str]) -> object:
        return api.generate(tito, payload, headers, what=what)  # kept with the others

    _send_own(tito, send, "GenerateResponse")
    media = tito.observed.get(f"GenerateResponse {MEDIA}", [])
    if media:
        shown = "; ".join(f"{what}: {value!r}" for what, value in media[:SHOWN])
        fail(
            f"{len(media)} JSON answers of generate came under another Content-Type than "
            f"the spec's application/json: {shown}"
        )
    _judge(tito, "GenerateResponse")


@checks("SCHEMA-STREAM-001", after_all=True)
def test_stream_events_match_schema(tito: Session) -> None:
    def send(what: str, payload: dict[str, Any], headers: dict[str, str]) -> object:
        return api.stream(tito, payload, headers, what=what.replace("generate", "stream"))

    _send_own(tito, send, "GenerateStreamPayload")
    _judge(tito, "GenerateStreamPayload")
