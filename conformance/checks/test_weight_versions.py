"""Weight versions: spans over output tokens, their labels, and where streams carry them."""

from __future__ import annotations

import pytest

from conformance import api
from conformance.checks.test_streaming import streamed
from conformance.http import Reply
from conformance.in_flight import Inconclusive, Timeline, sizes, stream_with
from conformance.registry import checks
from conformance.semantics import check_spans, choices_of, fail
from conformance.session import Session


def responses(s: Session) -> list[dict]:
    return s.remember(
        "wv",
        lambda: [
            api.generate(s, api.body(6, ignore_eos=True)),
            api.generate(s, api.seeded(9, n=s.limits.n(3))),
        ],
    )


@checks("WV-001", needs=("generate",))
def test_final_output_carries_list(tito: Session) -> None:
    for data in responses(tito):
        for choice in choices_of(data):
            if not isinstance(choice.get("weight_versions"), list):
                fail(
                    f"choice {choice.get('index')} has weight_versions "
                    f"{choice.get('weight_versions')!r}"
                )


@checks("WV-002", needs=("generate",))
def test_spans_cover_output(tito: Session) -> None:
    for data in responses(tito):
        for choice in choices_of(data):
            check_spans(
                choice.get("weight_versions"),
                len(choice.get("token_ids") or []),
                f"choice {choice.get('index')}",
            )


@checks("WV-003", "WV-004", needs=("generate",))
def test_stream_spans_cover_output(tito: Session) -> None:
    for index, choice in streamed(tito).choices().items():
        check_spans(
            choice.chunks[-1].get("weight_versions"),
            len(choice.token_ids),
            f"stream choice {index} last chunk",
        )


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
        pytest.skip(
            "not applicable: no way to get a zero-token output from this server "
            "(it has no X-Mock-Abort-After-Tokens hook)"
        )
    if choice.get("weight_versions") != []:
        fail(f"an output with no tokens has weight_versions {choice.get('weight_versions')!r}")


def _label(s: Session) -> str:
    info = s.client.get("/weight_info", auth=False).json()
    return str(info.get("weight_version"))


def _set_label(s: Session, label: str) -> Reply:
    reply = s.client.post("/update_weight_version", {"new_version": label}, auth=False)
    api.status_is(reply, 200, "/update_weight_version")
    return reply


def _labels(data: dict) -> set[str]:
    return {
        span.get("version") for c in choices_of(data) for span in c.get("weight_versions") or []
    }


@checks("WV-007", needs=("weight-labels",))
def test_label_is_applied(tito: Session) -> None:
    old, new = _label(tito), f"tito-{tito.session_id}-v2"
    _set_label(tito, new)
    try:
        labels = _labels(api.generate(tito, api.body(3, ignore_eos=True)))
    finally:
        _set_label(tito, old)
    if labels != {new}:
        fail(f"after /update_weight_version {new!r} the spans carry {labels}")


@checks("WV-008", needs=("generate",))
def test_default_label(tito: Session) -> None:
    expected = _label(tito) if tito.features.dev_mode else "default"
    labels = _labels(api.generate(tito, api.body(3, ignore_eos=True)))
    if labels != {expected}:
        fail(f"the spans carry labels {labels}, expected {{{expected!r}}}")


@checks("WV-009", needs=("weight-labels",))
def test_update_splits_spans(tito: Session) -> None:
    old, new = _label(tito), f"tito-{tito.session_id}-split"

    def attempt(max_tokens: int, number: int) -> Timeline:
        label = f"{new}-{number}"
        try:
            return stream_with(
                tito, tito.rid(f"split-{number}"), max_tokens, lambda _: _set_label(tito, label)
            )
        finally:
            _set_label(tito, old)

    def spans_of(line: Timeline) -> list:
        last = [c for c in line.choices() if c.get("finish_reason")]
        found = last[-1].get("weight_versions") if last else None
        return found if isinstance(found, list) else []

    tried: list[str] = []
    for number, max_tokens in enumerate(sizes(tito)):
        line = attempt(max_tokens, number)
        spans = spans_of(line)
        labels = [s.get("version") for s in spans if isinstance(s, dict)]
        if len(labels) >= 2 and labels[0] == old and labels[-1] == f"{new}-{number}":
            return
        margin = max(0.1, 10 * max(tito.limits.itl_s or 0.0, line.gap_s()))
        answered, ended = line.action_answered_s, line.ended_s
        if answered is not None and ended is not None and ended - answered > margin:
            fail(
                f"a label change from {old!r} to {new}-{number!r} answered while the request "
                f"ran gave spans {spans} ({line.describe()})"
            )
        tried.append(line.describe())
    raise Inconclusive(
        "could not make the label change land while a request was provably generating: "
        + " | ".join(tried)
    )
