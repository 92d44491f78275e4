"""Weight versions: spans over output tokens, their labels, and where streams carry them."""

from __future__ import annotations

import pytest

from conformance import api
from conformance.checks.test_streaming import streamed
from conformance.registry import checks
from conformance.semantics import check_spans, choices_of, fail
from conformance.session import Session


def responses(s: Session) -> list[dict]:
    return s.remember(
        "wv",
        lambda: [
            api.generate(s, api.body(6, ignore_eos=True)),
            api.generate(s, api.seeded(9, n=3)),
        ],
    )


@checks("WV-001")
def test_final_output_carries_list(tito: Session) -> None:
    tito.need_generate()
    for data in responses(tito):
        for choice in choices_of(data):
            if not isinstance(choice.get("weight_versions"), list):
                fail(
                    f"choice {choice.get('index')} has weight_versions "
                    f"{choice.get('weight_versions')!r}"
                )


@checks("WV-002")
def test_spans_cover_output(tito: Session) -> None:
    tito.need_generate()
    for data in responses(tito):
        for choice in choices_of(data):
            check_spans(
                choice.get("weight_versions"),
                len(choice.get("token_ids") or []),
                f"choice {choice.get('index')}",
            )


@checks("WV-003", "WV-004")
def test_stream_spans_cover_output(tito: Session) -> None:
    tito.need_generate()
    for index, choice in streamed(tito).choices().items():
        check_spans(
            choice.chunks[-1].get("weight_versions"),
            len(choice.token_ids),
            f"stream choice {index} last chunk",
        )


@checks("WV-005")
def test_no_list_before_last_chunk(tito: Session) -> None:
    tito.need_generate()
    for index, choice in streamed(tito).choices().items():
        for i, chunk in enumerate(choice.chunks[:-1]):
            if chunk.get("weight_versions") is not None:
                fail(
                    f"stream choice {index} chunk {i} (not its last) carries weight_versions "
                    f"{chunk['weight_versions']}"
                )


@checks("WV-006")
def test_empty_output_empty_list(tito: Session) -> None:
    tito.need_generate()
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


def _set_label(s: Session, label: str) -> None:
    reply = s.client.post("/update_weight_version", {"new_version": label}, auth=False)
    api.status_is(reply, 200, "/update_weight_version")


def _labels(data: dict) -> set[str]:
    return {
        span.get("version") for c in choices_of(data) for span in c.get("weight_versions") or []
    }


@checks("WV-007")
def test_label_is_applied(tito: Session) -> None:
    tito.need("weight-labels")
    old, new = _label(tito), f"tito-{tito.session_id}-v2"
    _set_label(tito, new)
    try:
        labels = _labels(api.generate(tito, api.body(3, ignore_eos=True)))
    finally:
        _set_label(tito, old)
    if labels != {new}:
        fail(f"after /update_weight_version {new!r} the spans carry {labels}")


@checks("WV-008")
def test_default_label(tito: Session) -> None:
    tito.need_generate()
    expected = _label(tito) if tito.features.dev_mode else "default"
    labels = _labels(api.generate(tito, api.body(3, ignore_eos=True)))
    if labels != {expected}:
        fail(f"the spans carry labels {labels}, expected {{{expected!r}}}")


@checks("WV-009")
def test_update_splits_spans(tito: Session) -> None:
    tito.need("weight-labels", "abort")
    old, new = _label(tito), f"tito-{tito.session_id}-split"
    rid = tito.rid("split")
    payload = {**api.body(None, ignore_eos=True), "stream": True}
    try:
        with tito.client.stream(api.GENERATE, payload, headers={"X-Request-Id": rid}) as st:
            head = api.read_stream(st, stop_after_tokens=1)
            _set_label(tito, new)
            api.read_stream(st, stop_after_tokens=20)
            tito.client.post(api.ABORT, {"request_ids": [f"generate-tokens-{rid}"]})
            tail = api.read_stream(st)
    finally:
        _set_label(tito, old)
    chunks = [c for ch in head.chunks + tail.chunks for c in ch.get("choices") or []]
    spans = chunks[-1].get("weight_versions") if chunks else None
    labels = [s.get("version") for s in spans or []]
    if len(labels) < 2 or labels[0] != old or labels[-1] != new:
        fail(f"a label change from {old!r} to {new!r} mid-request gave spans {spans}")
