"""A malformed answer fails the requirement about its form, not each check that read it.

A check that fails after reading an answer that breaks the spec's schema outside the fields its
own requirement governs is blocked naming SCHEMA-GEN-001 / SCHEMA-STREAM-001, which judge every
body the run received and report the leaf. Shown with faults the kit did not write (the
generated catalogue, applied by the fault proxy in front of a correct mock).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from benchmarks.fault_catalogue import generate_faults
from benchmarks.fault_proxy import proxied
from conformance.run.embedded import QUICK, embedded_mock
from conformance.run.runner import run
from conformance.verdicts.results import Report, SkipKind, Status

FAULTS = {f.name: f for f in generate_faults()}


def _run(fault: str, requirement_ids: set[str], profile: str = "scale-out") -> Report:
    with (
        embedded_mock(profile, (), (), **QUICK) as (_, config),
        proxied(config.base_url, FAULTS[fault]) as (url, _app),
    ):
        return run(replace(config, base_url=url, requirement_ids=frozenset(requirement_ids)))


def test_a_check_that_read_a_malformed_chunk_is_blocked_on_its_form() -> None:
    report = _run(
        "stream.chunk.choices[].token_ids[]:wrong-type", {"STREAM-003", "SCHEMA-STREAM-001"}
    )
    form = report.result("SCHEMA-STREAM-001")
    assert form.status is Status.FAIL
    assert "/choices/0/token_ids/" in form.reason  # at the leaf
    deltas = report.result("STREAM-003")
    assert deltas.status is not Status.FAIL, deltas.reason
    # the tokens-mode stream's check read the fault (a text-mode stream's check did not)
    tokens = [c for c in deltas.checks if "test_text_mode" not in c.name]
    assert tokens and all(c.skip_kind is SkipKind.BLOCKED for c in tokens)
    assert all(c.blocked_by == "SCHEMA-STREAM-001" for c in tokens)


def test_without_the_form_requirement_in_the_run_the_check_fails() -> None:
    """Blocking names a requirement the run decides; never a skip that hides the fault."""
    report = _run("stream.chunk.choices[].token_ids[]:wrong-type", {"STREAM-003"})
    assert report.result("STREAM-003").status is Status.FAIL


@pytest.mark.parametrize("fault", ["generate.choices[].finish_reason:null"])
def test_a_requirement_about_the_field_still_fails(fault: str) -> None:
    """GEN-RESP-002 governs finish_reason: malformed there, it fails, and SCHEMA-GEN-001 (the
    form of everything else) is blocked naming it; with GEN-RESP-002 out of the run, the form
    fails at the leaf."""
    report = _run(fault, {"GEN-RESP-002", "SCHEMA-GEN-001", "GEN-RESP-003"})
    assert report.result("GEN-RESP-002").status is Status.FAIL
    form = report.result("SCHEMA-GEN-001")
    assert form.status is Status.SKIP and form.blocked_by == "GEN-RESP-002", form.reason
    assert report.result("GEN-RESP-003").status is Status.PASS  # usage is well formed
    alone = _run(fault, {"SCHEMA-GEN-001"}).result("SCHEMA-GEN-001")
    assert alone.status is Status.FAIL and "/finish_reason" in alone.reason


@pytest.mark.parametrize(
    ("fault", "rid", "leaf"),
    [
        ("generate-text.choices[].logprobs:wrong-type", "TEXT-003", "/choices/0/logprobs"),
        ("stream.chunk.choices:null", "STREAM-006", "/choices"),
    ],
)
def test_a_check_that_cannot_read_its_own_field_fails_on_it(
    fault: str, rid: str, leaf: str
) -> None:
    """Malformed in the field its requirement governs, the answer trips the check's reading
    (a string where an object belongs): that is the requirement failing at the leaf, not the
    harness breaking."""
    report = _run(fault, {rid, "SCHEMA-GEN-001", "SCHEMA-STREAM-001"})
    result = report.result(rid)
    assert result.status is Status.FAIL, result.reason
    assert leaf in result.reason and "harness error" not in result.reason
    assert not [r.requirement.id for r in report.requirements if r.status is Status.ERROR]


def test_a_helper_answer_of_the_wrong_form_blocks_on_its_owner() -> None:
    """TEXT-008 finds a special token through chat render; a chat render answer that is no
    GenerateRequest is RENDER-002's, which fails on it, and TEXT-008 is blocked naming it."""
    report = _run("render-chat.token_ids:wrong-type", {"TEXT-008", "RENDER-002"})
    assert report.result("RENDER-002").status is Status.FAIL
    special = report.result("TEXT-008")
    assert special.status is Status.SKIP and special.blocked_by == "RENDER-002", special.reason


@pytest.mark.parametrize(
    ("fault", "path"),
    [
        ("render-chat:status=400->200", "/v1/chat/completions/render"),
        ("render-chat:status=400->422", "/v1/chat/completions/render"),
        ("derender:status=400->200", "/v1/completions/derender"),
    ],
)
def test_an_error_under_another_status_fails_err_002_on_any_route(fault: str, path: str) -> None:
    """A tokens-only server cannot render chat (no tokenizer): its 400 answered as a 200 or a
    422 is judged with every other error answer of the run, whichever route or probe got it."""
    report = _run(fault, {"ERR-002", "RENDER-002", "TEXT-008"}, profile="tokens-only")
    err = report.result("ERR-002")
    assert err.status is Status.FAIL and path in err.reason, err.reason
    assert [r.requirement.id for r in report.requirements if r.status is Status.FAIL] == ["ERR-002"]
