"""Weight versions: spans over output tokens, their labels, and where streams carry them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from conformance import api
from conformance.checks.test_streaming import streamed
from conformance.grounds import TEXT_GROUND, builds_on
from conformance.grounds.probes import text_answer
from conformance.inflight import script
from conformance.inflight.attempts import Outcome, Plan, Timeline, overlapped, stream_with
from conformance.outcomes import Absent, Failure
from conformance.registry import checks
from conformance.requirements.model import MUST, Feature, Proof, Requirement, fuzz
from conformance.session import Session
from conformance.tito.semantics import check_spans, choices_of, fail
from conformance.verdicts.reproducer import Evidence
from conformance.wire import Reply
from conformance.wire.exchange import dumps

REQUIREMENTS = [
    Requirement(
        "WV-001",
        MUST,
        Feature.WEIGHT_VERSIONS,
        "The final output of every choice carries weight_versions",
        "every non-streamed choice carries a weight_versions list",
        needs=("generate",),
        fields=("weight_versions",),
    ),
    Requirement(
        "WV-002",
        MUST,
        Feature.WEIGHT_VERSIONS,
        "Ranges are half-open over output-token indexes (prompt excluded), contiguous and in "
        "generation order",
        "spans start at 0, are contiguous and non-empty, and end at len(token_ids)",
        needs=("generate",),
        sequences=("label-then-generate",),
    ),
    Requirement(
        "WV-003",
        MUST,
        Feature.WEIGHT_VERSIONS,
        "With stream: true, only the last chunk of each choice carries the list, including the "
        "last chunk after an abort.",
        "each choice's last chunk carries the list, also after an abort",
        needs=("generate",),
        fields=("weight_versions",),
    ),
    Requirement(
        "WV-004",
        MUST,
        Feature.WEIGHT_VERSIONS,
        "Its offsets cover the whole output.",
        "the streamed list covers every streamed token of the choice",
        needs=("generate",),
    ),
    Requirement(
        "WV-005",
        MUST,
        Feature.WEIGHT_VERSIONS,
        "Earlier chunks carry null or omit the field.",
        "no list before a choice's last chunk",
        needs=("generate",),
        fields=("weight_versions",),
    ),
    Requirement(
        "WV-006",
        MUST,
        Feature.WEIGHT_VERSIONS,
        "An output with no tokens, such as a request aborted before its first token, gets [].",
        "a zero-token output gets []",
        needs=("generate",),
    ),
    Requirement(
        "WV-007",
        MUST,
        Feature.WEIGHT_VERSIONS,
        "The labels are the ones you set with /update_weight_version or /finish_weight_update",
        "a label set with /update_weight_version labels the next requests",
        needs=("weight-labels",),
        anchor="weight-labels",
        fuzz=(fuzz(130, operations=("updateWeightVersion", "finishWeightUpdate")),),
        sequences=("label-then-generate",),
    ),
    Requirement(
        "WV-008",
        MUST,
        Feature.WEIGHT_VERSIONS,
        'the label is "default" until you set one.',
        'the label is "default" (or the one /weight_info reports)',
        needs=("generate",),
        fuzz=(fuzz(130, operations=("weightInfo",)),),
    ),
    Requirement(
        "WV-009",
        MUST,
        Feature.WEIGHT_VERSIONS,
        "so a request that crossed one weight update gets two",
        "a label change during a request splits its spans there",
        needs=("weight-labels",),
        proofs=(Proof.STATEMENT, Proof.BOUND),
    ),
]


def responses(s: Session) -> Iterator[dict]:
    """Answers to judge spans on: tokens mode, n choices, and text mode where it is served
    (the spans count token_ids in every mode). The text-mode answer comes last, standing on
    TEXT-001: one with no choices at all is that requirement's, not the spans'."""
    yield from s.remember(
        "wv",
        lambda: [
            api.generate(s, api.body(6, ignore_eos=True)),
            api.generate(s, api.seeded(9, n=s.limits.n(3))),
        ],
    )
    if "text-mode" in s.features.names():
        builds_on(s, TEXT_GROUND)
        yield text_answer(s)


@checks("WV-001", needs=("generate",))
def test_final_output_carries_list(tito: Session) -> None:
    for data in responses(tito):
        for choice in choices_of(data):
            if "weight_versions" not in choice:
                fail(f"no weight_versions: choice {choice.get('index')} has no such key")
            if not isinstance(choice["weight_versions"], list):
                fail(
                    f"choice {choice.get('index')} has weight_versions "
                    f"{choice['weight_versions']!r}, not a list"
                )


def spans_or_blocked(s: Session, spans: object, ground: str = "WV-001") -> None:
    """A missing list is `ground`'s failure (WV-001 non-streamed, WV-003 streamed): blocked
    where that is broken on this server, judged here otherwise."""
    if not isinstance(spans, list):
        builds_on(s, ground)


@checks("WV-002", needs=("generate",), builds_on=("GEN-RESP-003",))
def test_spans_cover_output(tito: Session) -> None:
    for data in responses(tito):
        for choice in choices_of(data):
            spans_or_blocked(tito, choice.get("weight_versions"))
            check_spans(
                choice.get("weight_versions"),
                len(choice.get("token_ids") or []),
                f"choice {choice.get('index')}",
            )


@checks("WV-003", needs=("generate",), builds_on=("STREAM-001",))
def test_stream_last_chunk_carries_list(tito: Session) -> None:
    for index, choice in streamed(tito).choices().items():
        spans = choice.chunks[-1].get("weight_versions")
        if not isinstance(spans, list):
            spans_or_blocked(tito, spans)  # missing everywhere: WV-001's
            fail(f"stream choice {index}: its last chunk has weight_versions {spans!r}")


@checks("WV-004", needs=("generate",), builds_on=("STREAM-001", "STREAM-003"))
def test_stream_spans_cover_output(tito: Session) -> None:
    for index, choice in streamed(tito).choices().items():
        spans = choice.chunks[-1].get("weight_versions")
        spans_or_blocked(tito, spans, "WV-003")
        try:
            check_spans(spans, len(choice.token_ids), f"stream choice {index} last chunk")
        except AssertionError:
            builds_on(tito, "WV-002")  # the same spans are wrong non-streamed too: WV-002's
            raise


@checks("WV-005", needs=("generate",))
def test_no_list_before_last_chunk(tito: Session) -> None:
    for index, choice in streamed(tito).choices().items():
        for i, chunk in enumerate(choice.chunks[:-1]):
            if chunk.get("weight_versions") is not None:
                fail(
                    f"stream choice {index} chunk {i} (not its last) carries weight_versions "
                    f"{chunk['weight_versions']}"
                )


@checks("WV-006", needs=("generate",))
def test_empty_output_empty_list(tito: Session) -> None:
    data = api.generate(tito, api.body(4), headers={"X-Mock-Abort-After-Tokens": "0"})
    choice = choices_of(data)[0]
    if choice.get("token_ids"):
        raise Absent(
            "not applicable: no way to get a zero-token output from this server "
            "(it has no X-Mock-Abort-After-Tokens hook)"
        )
    spans_or_blocked(tito, choice.get("weight_versions"))
    if choice.get("weight_versions") != []:
        fail(f"an output with no tokens has weight_versions {choice.get('weight_versions')!r}")


def _label(s: Session) -> str:
    info = s.client.get("/weight_info", auth=False).json()
    return str(info.get("weight_version"))


def _set_label(s: Session, label: str) -> Reply:
    reply = s.client.post("/update_weight_version", {"new_version": label}, auth=False)
    api.status_is(reply, 200, "/update_weight_version")
    return reply


def _listed(spans: object) -> list[Any]:
    return spans if isinstance(spans, list) else []


def _labels(s: Session, data: dict) -> set[Any]:
    for choice in choices_of(data):
        spans = choice.get("weight_versions")
        spans_or_blocked(s, spans)
        if isinstance(spans, list) and not all(isinstance(x, dict) for x in spans):
            builds_on(s, "WV-002")  # spans that are no objects: WV-002's where broken
    return {  # spans that are no objects: SCHEMA-GEN-001's (WV-002 fails them too)
        span.get("version")
        for c in choices_of(data)
        for span in c.get("weight_versions") or []
        if isinstance(span, dict)
    }


@checks("WV-007", needs=("weight-labels",))
def test_label_is_applied(tito: Session) -> None:
    old, new = _label(tito), f"tito-{tito.session_id}-v2"
    _set_label(tito, new)
    try:
        labels = _labels(tito, api.generate(tito, api.body(3, ignore_eos=True)))
    finally:
        _set_label(tito, old)
    if labels != {new}:
        fail(f"after /update_weight_version {new!r} the spans carry {labels}")


@checks("WV-008", needs=("generate",))
def test_default_label(tito: Session) -> None:
    """The label in force, in every mode's answer (text mode's spans are labelled alike)."""
    expected = _label(tito) if tito.features.dev_mode else "default"
    labels = _labels(tito, api.generate(tito, api.body(3, ignore_eos=True)))
    if labels != {expected}:
        fail(f"the spans carry labels {labels}, expected {{{expected!r}}}")
    if "text-mode" in tito.features.names():
        builds_on(tito, TEXT_GROUND)
        text = api.body(3, ignore_eos=True, top={"output_mode": "text"})
        labels = _labels(tito, api.generate(tito, text, what="text mode"))
        if labels != {expected}:
            fail(f"a text-mode answer's spans carry labels {labels}, expected {{{expected!r}}}")
        ends = api.stream(tito, text, what="text mode, streamed").choices().values()
        labels = {
            span.get("version")
            for choice in ends
            for span in _listed(choice.chunks[-1].get("weight_versions"))
            if isinstance(span, dict)
        }
        if labels and labels != {expected}:  # a stream without spans is WV-003's
            fail(f"a text-mode stream's spans carry labels {labels}, expected {{{expected!r}}}")


@checks(
    "WV-009", needs=("weight-labels",), builds_on=("STREAM-001", "STREAM-003", "WV-003", "WV-007")
)
def test_update_splits_spans(tito: Session) -> None:
    old, new = _label(tito), f"tito-{tito.session_id}-split"

    def attempt(plan: Plan, number: int) -> Timeline:
        label = f"{new}-{number}"
        try:
            return stream_with(
                tito, tito.rid(f"split-{number}"), plan, lambda _: _set_label(tito, label)
            )
        finally:
            _set_label(tito, old)

    def spans_of(line: Timeline) -> list:
        last = line.last_finished()
        found = last.get("weight_versions") if last is not None else None
        return found if isinstance(found, list) else []

    def labels_of(choice: dict) -> list:
        found = choice.get("weight_versions")
        return [s.get("version") for s in found or [] if isinstance(s, dict)]

    def split(line: Timeline, number: int) -> bool:
        # the first label's name is WV-008's; the split is this requirement's (of any choice:
        # sequences asked together may end before the change)
        return any(
            len(labels) >= 2 and labels[0] != labels[-1] == f"{new}-{number}"
            for labels in (labels_of(c) for c in line.choices() if c.get("finish_reason"))
        )

    # the change must come while the request runs: never while it waits in a queue
    line, outcome = overlapped(
        tito,
        attempt,
        "changing the label of a running request",
        split,
        queue=False,
        requirement="WV-009",
    )
    if outcome is Outcome.IGNORED:
        why = f"a label change from {old!r} to {new!r} answered while the request ran"
        seen = Evidence("stream", "len(choices[0].weight_versions)", len(spans_of(line)))
        put_back = []
        if line.action is not None:  # the kit puts the label back after each attempt
            put_back = [replace(line.action.exchange, body=dumps({"new_version": old}))]
        raise Failure(
            f"{why} gave spans {spans_of(line)} ({line.describe()})",
            evidence=str(seen),
            reproducer=script.of_line(f"{why} split no span", line, str(seen), put_back),
        )
