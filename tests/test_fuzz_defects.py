"""The mock defects about input validation, status codes, error bodies and schemas that the
fuzzer must find, each alone in a fresh in-process mock, on generate only (small budget)."""

from __future__ import annotations

import pytest

from conformance.fuzz.campaign import summary_text
from mock_server.behaviour.defects import DEFECTS
from tests.test_fuzz_mock import run_profile

SCHEMA = {"response_schema_conformance", "content_type_conformance"}
REJECT = {"negative_data_rejection", "status_code_conformance", "not_a_server_error"}
FOUND_BY: dict[str, tuple[str, str, set[str]]] = {
    # defect: (profile, group, checks any of which must fail)
    "validation-422": ("scale-out", "negative", REJECT),
    "error-body-flat": ("scale-out", "negative", {"error_body_shape"} | SCHEMA),
    "empty-token-ids-accepted": ("scale-out", "negative", REJECT),
    "negative-token-ids-accepted": ("scale-out", "negative", REJECT),
    "invalid-json-500": ("scale-out", "negative", REJECT),
    "garbage-json": ("scale-out", "positive", SCHEMA),
    "schema-index-string": ("scale-out", "positive", SCHEMA),
    "unauthorized-body-wrong": ("api-key", "negative", {"error_body_shape"} | SCHEMA),
    "disabled-404": ("disabled", "positive", {"positive_data_acceptance"}),
    "unknown-field-rejected": ("scale-out", "positive", {"positive_data_acceptance"}),
    "logprobs-over-max-accepted": ("scale-out", "negative", REJECT),
    "request-id-no-prefix": ("scale-out", "positive", {"request_id_prefix"} | SCHEMA),
    "stream-no-done": ("scale-out", "positive", {"stream_well_framed"}),
    "stream-bad-framing": ("scale-out", "positive", {"stream_well_framed"} | SCHEMA),
    "wrong-content-type-accepted": ("scale-out", "wrong-media-type", {"media_type_rejected"}),
    "oov-token-500": (
        "tokens-only",
        "out-of-vocabulary",
        {"oov_rejected", "not_a_server_error", "server_survives"},
    ),
}
EXAMPLES = int(__import__("os").environ.get("TITO_FUZZ_DEFECT_EXAMPLES", "60"))


def test_every_listed_defect_exists() -> None:
    assert set(FOUND_BY) <= set(DEFECTS)


@pytest.mark.parametrize("defect", list(FOUND_BY))
def test_fuzzer_finds_defect(defect: str) -> None:
    profile, group, checks = FOUND_BY[defect]
    result = run_profile(
        profile,
        EXAMPLES,
        (defect,),
        operations=("generate",),
        stateful=False,
        oov_group=group == "out-of-vocabulary",
        negative=group in ("negative", "wrong-media-type"),
    )
    hits = [f for f in result.findings if f.group == group and f.check in checks]
    assert hits, f"{defect} not found:\n{summary_text(result)}"
    assert all(f.requirement_ids for f in hits)


SEQUENCE_FOUND_BY: dict[str, tuple[str, str, str]] = {
    # defect: (profile, sequence, check that must fail)
    "abort-ignored": ("scale-out", "generate-then-abort", "abort_in_flight"),
    "abort-finish-reason-length": ("scale-out", "generate-then-abort", "abort_in_flight"),
    "weight-versions-not-reset": ("dev-mode", "label-then-generate", "weight_label_spans"),
    "weight-versions-gap": ("dev-mode", "label-then-generate", "weight_span_cover"),
}


def test_every_listed_sequence_defect_exists() -> None:
    assert set(SEQUENCE_FOUND_BY) <= set(DEFECTS)


@pytest.mark.parametrize("defect", list(SEQUENCE_FOUND_BY))
def test_sequences_find_defect(defect: str) -> None:
    """The stateful sequences alone (the fuzzed operation is /health, for speed)."""
    profile, sequence, check = SEQUENCE_FOUND_BY[defect]
    result = run_profile(
        profile, 10, (defect,), operations=("health",), negative=False, oov_group=False
    )
    assert any(s.operation == sequence and s.cases for s in result.stats), summary_text(result)
    hits = [f for f in result.findings if f.group == "stateful" and f.check == check]
    assert hits, f"{defect} not found:\n{summary_text(result)}"
    assert all(f.requirement_ids for f in hits)
