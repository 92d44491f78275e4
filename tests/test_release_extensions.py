"""Release extensions (issue 21, "Past vLLM 0.32"): derender mode and parse_context as extensions.

vLLM 0.33 adds `output_mode: "derender"` and `parse_context`, 0.34 the streamed derender answer
and `parse_context.return_tokens_as_token_ids`. The document's rules never fail a server for
them; where a server shows them or a vendor claims them (`--expect`), the EXT-* requirements
(`conformance/checks/test_release_extensions.py`) judge them. These prove: a 0.32 server is
untouched (skipped, the run passes), a 0.34 mock passes them all, a claim a 0.32 server cannot
keep fails its anchor and nothing else, and each defect of theirs fails its requirement and
little else.
Every run is the whole suite against the embedded mock (a few seconds each).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from conformance.api import schema_problems
from conformance.requirements import Level, Source, all_requirements
from conformance.run.embedded import QUICK, embedded_mock
from conformance.run.runner import run
from conformance.server.features import KNOWN_FEATURES, Features, anchors
from conformance.verdicts.levels import group_of, level_of
from conformance.verdicts.results import Report, SkipKind, Status, exit_code
from mock_server.behaviour.defects import DEFECTS, RELEASE_034
from mock_server.harness.testing import asgi_client

EXT = ("EXT-DERENDER-001", "EXT-DERENDER-002", "EXT-PARSE-001", "EXT-PARSE-002")
FEATURES = ("output-mode-derender", "derender-stream", "parse-context")
GEN = "/inference/v1/generate"


def full_run(flags: tuple[str, ...] = (), defects: tuple[str, ...] = (), **config: Any) -> Report:
    """The whole suite against the scale-out mock (0.32 unless `flags` say otherwise)."""
    with embedded_mock("scale-out", flags, defects, **QUICK, **config) as (_, suite):
        return run(suite)


def failed(report: Report) -> dict[str, str]:
    """The requirements that failed or broke, with why."""
    bad = (Status.FAIL, Status.ERROR)
    return {r.requirement.id: r.reason for r in report.requirements if r.status in bad}


# -- the catalogue ----------------------------------------------------------------------------
def test_release_requirements_are_claimable_extensions() -> None:
    release = [r for r in all_requirements() if r.source is Source.RELEASE]
    assert [r.id for r in release] == list(EXT)
    for req in release:
        assert req.level is Level.MUST, req.id  # for a server that shows or claims the feature
        assert "protocol.py" in req.evidence, req.id  # the wheel's file and class
        assert req.needs and req.needs[0] in FEATURES, req.id  # never judged unasked
        for name in req.defects:
            assert DEFECTS[name].flags == RELEASE_034 and req.id in DEFECTS[name].requirements
    assert set(FEATURES) <= set(KNOWN_FEATURES) and set(FEATURES) <= set(anchors())
    assert {group_of(rid) for rid in EXT} == {"derender-mode", "parse-context"}


@pytest.mark.parametrize(
    ("features", "claims", "name", "anchor"),
    [
        ({}, {"parse-context"}, "parse-context", "EXT-PARSE-001"),
        # the mode itself missing, and claimed: its anchor, the parts are blocked naming it
        ({}, {"output-mode-derender", "parse-context"}, "parse-context", "EXT-DERENDER-001"),
        ({}, {"output-mode-derender", "derender-stream"}, "derender-stream", "EXT-DERENDER-001"),
        (
            {"derender": True},
            {"output-mode-derender", "derender-stream"},
            "derender-stream",
            "EXT-DERENDER-002",
        ),
    ],
)
def test_a_claimed_absent_part_fails_its_root(
    features: dict[str, bool], claims: set[str], name: str, anchor: str
) -> None:
    found = Features(generate="enabled", **features)
    assert found.anchor(name, frozenset(claims)) == anchor


def test_a_part_needs_the_mode() -> None:
    """A 0.31 server ignores output_mode (a tokens answer, 200): no part is there without it."""
    parts = Features(generate="enabled", derender_stream=True, parse_context=True)
    assert not set(FEATURES) & set(parts.names())
    whole = Features(generate="enabled", derender=True, derender_stream=True, parse_context=True)
    assert set(FEATURES) <= set(whole.names())


# -- the spec ---------------------------------------------------------------------------------
async def _derender_answers(version: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    body = {
        "token_ids": [1, 2, 3],
        "sampling_params": {"max_tokens": 5, "seed": 7, "n": 2, "logprobs": 2},
        "output_mode": "derender",
    }
    streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
    async with asgi_client(["--enable-scale-out", "--mock-vllm-version", version]) as client:
        whole = (await client.post(GEN, json=body)).json()
        text = (await client.post(GEN, json=streamed)).text if version == "0.34" else ""
    chunks = [
        json.loads(block.removeprefix("data: "))
        for block in text.split("\n\n")
        if block.startswith("data: {")
    ]
    return whole, chunks


@pytest.mark.parametrize("version", ["0.33", "0.34"])
def test_the_release_s_answers_match_the_extension_schemas(version: str) -> None:
    whole, chunks = asyncio.run(_derender_answers(version))
    assert schema_problems("GenerateDerenderResponse", whole) == []
    assert schema_problems("GenerateResponse", whole)  # not a document answer: its own schema
    assert all(schema_problems("GenerateDerenderStreamChunk", c) == [] for c in chunks)
    assert len(chunks) > 2 or version == "0.33"


# -- runs against the mock --------------------------------------------------------------------
def test_a_032_server_is_untouched() -> None:
    """(a) Nothing detected, nothing claimed: every release requirement is not applicable."""
    report = full_run()
    assert exit_code([report]) == 0, failed(report)
    for rid in EXT:
        result = report.result(rid)
        assert result.status is Status.SKIP and result.skip_kind is not SkipKind.BLOCKED, rid
        assert result.reason.startswith("not applicable"), result.reason
    assert not set(FEATURES) & set(report.server.detected_features)
    extended = level_of(report)["extended"]
    assert extended["derender-mode"] == extended["parse-context"] == "absent"


def test_a_034_server_passes_what_it_claims() -> None:
    """(b) A 0.34 mock claiming the derender mode and parse_context passes every check."""
    claims = frozenset({"output-mode-derender", "parse-context"})
    report = full_run(RELEASE_034, expect=claims)
    assert exit_code([report]) == 0, failed(report)
    assert all(report.result(rid).status is Status.PASS for rid in EXT)
    assert set(FEATURES) <= set(report.server.detected_features)  # the stream detected too
    extended = level_of(report)["extended"]
    assert extended["derender-mode"] == extended["parse-context"] == "passed"


def test_a_claim_a_032_server_cannot_keep_fails_its_anchor_only() -> None:
    """(c) `--expect output-mode-derender` against 0.32: EXT-DERENDER-001 fails, nothing else."""
    report = full_run(expect=frozenset({"output-mode-derender"}))
    assert exit_code([report]) == 1
    assert list(failed(report)) == ["EXT-DERENDER-001"], failed(report)
    assert "claimed feature 'output-mode-derender'" in report.result("EXT-DERENDER-001").reason
    assert level_of(report)["extended"]["derender-mode"] == "failed"
    assert level_of(report)["core"] == "reached"


RELEASE_DEFECTS = sorted(name for r in all_requirements() for name in r.defects if r.id in EXT)


@pytest.mark.parametrize("defect", RELEASE_DEFECTS)
def test_each_defect_fails_its_requirement(defect: str) -> None:
    """(d) Against the 0.34 mock (which fails nothing on its own: the test above), each defect
    fails the requirements it declares and at most 2 others."""
    report = full_run(DEFECTS[defect].flags, (defect,))
    found = failed(report)
    declared = set(DEFECTS[defect].requirements)
    assert declared <= set(found), (defect, found)
    assert len(set(found) - declared) <= 2, (defect, found)
    assert exit_code([report]) == 1
