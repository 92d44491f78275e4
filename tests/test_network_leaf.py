"""The fuzzer's schema failures are reported the way the suite reports them: at the leaf (the
JSON path, the rule broken, the value), never as schemathesis's dump of the whole body beside
the whole `oneOf` schema."""

from __future__ import annotations

import json

from conformance.fuzz.campaign import summary_text
from conformance.fuzz.oracles import answer_problems, chunk_problem
from tests.test_fuzz_mock import run_profile

SHORT = 600
"""A leaf message and a 300-byte answer snippet fit in this; a schema dump never does."""


def _schema_findings(defect: str, stream: bool) -> list[str]:
    result = run_profile(
        "scale-out",
        10,
        (defect,),
        operations=("generate",),
        stateful=False,
        oov_group=False,
        negative=False,
    )
    wanted = "SCHEMA-STREAM-001" if stream else "SCHEMA-GEN-001"
    found = [
        f.message
        for f in result.findings
        if f.check == "response_schema_conformance" and wanted in f.requirement_ids
    ]
    assert found, f"{defect}: no {wanted} finding:\n{summary_text(result)}"
    return found


def test_a_wrong_nested_field_is_reported_at_its_leaf() -> None:
    """finish-reason-null: one field of each choice is null; the finding names that field."""
    for message in _schema_findings("finish-reason-null", stream=False):
        assert "at /choices/0/finish_reason" in message, message
        assert "got None" in message, message
        assert "oneOf" not in message and "Schema at" not in message, message
        assert len(message) < SHORT, message


def test_a_wrong_chunk_field_is_reported_at_its_leaf() -> None:
    """schema-index-string: every chunk's choice index is a string; the stream's finding names
    the event and the field inside its data."""
    for message in _schema_findings("schema-index-string", stream=True):
        assert "/data/choices/0/index" in message, message
        assert "oneOf" not in message and "Schema at" not in message, message
        assert len(message) < SHORT, message


class _Answer:
    def __init__(self, status: int, content_type: str, content: bytes) -> None:
        self.status_code = status
        self.headers = {"content-type": [content_type]}
        self.content = content


class _Case:
    path = "/inference/v1/generate"
    method = "POST"


def _choice(**changes: object) -> dict[str, object]:
    return {
        "index": 0,
        "token_ids": [1, 2],
        "finish_reason": "length",
        "stop_reason": None,
        "logprobs": None,
        **changes,
    }


def test_answer_problems_reads_json_and_sse() -> None:
    body = {"request_id": "generate-tokens-x", "choices": [_choice(index="0")]}
    problems = answer_problems(_Answer(200, "application/json", json.dumps(body).encode()), _Case)
    assert any(p.startswith("at /choices/0/index") for p in problems), problems
    chunk = {"request_id": "generate-tokens-x", "choices": [_choice(token_ids="12")]}
    raw = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
    problems = answer_problems(_Answer(200, "text/event-stream", raw), _Case)
    assert problems and problems[0].startswith("event 0 at /data/choices/0/token_ids"), problems
    assert chunk_problem(raw).startswith("event 0 is not a valid chunk: at /data/choices/0/")


def test_an_undocumented_answer_has_no_schema_to_break() -> None:
    assert answer_problems(_Answer(200, "text/plain", b"hello"), _Case) == []
