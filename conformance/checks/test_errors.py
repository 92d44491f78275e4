"""Bad input: a clear 4xx with vLLM's error body, never a 5xx."""

from __future__ import annotations

from typing import Any

from conformance import api
from conformance.registry import checks
from conformance.requirements.model import (
    MUST,
    SCHEMA_CHECKS,
    SERVING_PROFILES,
    SHOULD,
    Feature,
    Requirement,
    Source,
    fuzz,
)
from conformance.server.features import DERENDER
from conformance.session import MISSTATED, Session
from conformance.tito.semantics import fail
from conformance.wire.exchange import stated_error

REQUIREMENTS = [
    Requirement(
        "ERR-001",
        MUST,
        Feature.ERRORS,
        "An unsupported output_mode value.",
        "an unknown output_mode (and null) is a 400",
        expected_status=400,
        needs=("generate",),
        diff=("output-mode-invalid",),
    ),
    Requirement(
        "ERR-002",
        SHOULD,
        Feature.ERRORS,
        'Error bodies are {"error": {"message", "type", "param", "code"}} with code equal to the '
        "HTTP status.",
        "4xx bodies have vLLM's ErrorResponse shape",
        source=Source.VLLM,
        evidence="vllm-source-notes §8.1; every 400 capture",
        needs=("generate",),
        fuzz=(
            fuzz(
                20,
                groups=("wrong-media-type",),
                profiles=SERVING_PROFILES,
                checks=("error_body_shape",),
            ),
            fuzz(41, checks=("error_body_shape",)),
            fuzz(41, checks=SCHEMA_CHECKS, statuses=(400, 999)),
        ),
    ),
    Requirement(
        "ERR-003",
        SHOULD,
        Feature.ERRORS,
        "Request validation errors are 400, not 422.",
        "validation errors are 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-cpu.md 'Real bugs and surprises'",
        needs=("generate",),
        fuzz=(
            fuzz(90, checks=("not_a_server_error",), groups=("negative",)),
            fuzz(
                100,
                checks=("negative_data_rejection", "status_code_conformance"),
                groups=("negative",),
            ),
        ),
        diff=(
            "null-temperature",
            "null-n",
            "null-request-id",
            "temperature-negative",
            "n5-over-max-num-seqs",
            "prompt-logprobs-21",
            "prompt-over-context",
            "cache-salt-empty",
            "prompt-logprob-token-ids",
            "body-not-object",
        ),
    ),
    Requirement(
        "ERR-004",
        SHOULD,
        Feature.ERRORS,
        "Unknown fields, top level or inside sampling_params, are ignored.",
        "unknown keys do not fail a request",
        source=Source.VLLM,
        expected_status=200,
        evidence="vllm-cpu.md; capture unknown_fields_*",
        needs=("generate",),
        fuzz=(fuzz(111, checks=("positive_data_acceptance",), operations=("generate",)),),
        diff=("unknown-top-level", "unknown-sampling"),
    ),
    Requirement(
        "ERR-005",
        SHOULD,
        Feature.ERRORS,
        "A body that is not valid JSON is a 400.",
        "malformed JSON is a 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="capture invalid_json",
        needs=("generate",),
        fuzz=(
            fuzz(
                90, checks=("not_a_server_error",), groups=("negative",), operations=("generate",)
            ),
        ),
        diff=("invalid-json", "abort-invalid-json"),
    ),
    Requirement(
        "ERR-006",
        SHOULD,
        Feature.ERRORS,
        "A Content-Type other than application/json is a 400.",
        "a non-JSON Content-Type is a 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-cpu.md; vllm-source-notes §8.2",
        needs=("generate",),
        fuzz=(fuzz(21, groups=("wrong-media-type",), profiles=SERVING_PROFILES),),
        diff=("wrong-content-type",),
    ),
    Requirement(
        "ERR-007",
        SHOULD,
        Feature.ERRORS,
        "A token id beyond the vocabulary is a 400 and the server keeps serving.",
        "an out-of-vocabulary token id is a 400, never a 5xx",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-cpu.md (0.32 --tokens-only answers 500 and exits: a known bug)",
        needs=("generate",),
        fuzz=(fuzz(10, groups=("out-of-vocabulary",)),),
        diff=("oov-token-id",),
    ),
    Requirement(
        "ERR-008",
        SHOULD,
        Feature.ERRORS,
        "Malformed field values are answered 4xx, never 5xx.",
        "a battery of wrongly typed fields gets 4xx answers",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-source-notes §8.2",
        needs=("generate",),
        fuzz=(fuzz(140),),
    ),
    Requirement(
        "ERR-009",
        SHOULD,
        Feature.ERRORS,
        "Explicit null is accepted for the fields vLLM declares nullable.",
        "null for nullable fields is accepted",
        source=Source.VLLM,
        expected_status=200,
        evidence="vllm-cpu.md 'More behaviour'",
        needs=("generate",),
        diff=("nulls-accepted",),
    ),
    Requirement(
        "ERR-010",
        SHOULD,
        Feature.ERRORS,
        "sampling_params.max_tokens 0 is a 400.",
        "max_tokens 0 is a 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-cpu.md",
        needs=("generate",),
        diff=("max-tokens-0",),
    ),
]

BAD_FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("temperature 'x'", api.body(2, temperature="x")),
    ("max_tokens 'a'", api.body(2) | {"sampling_params": {"max_tokens": "a"}}),
    ("n 0", api.body(2, n=0)),
    ("top_p 5", api.body(2, top_p=5)),
    ("token_ids 'abc'", api.body(2) | {"token_ids": "abc"}),
    ("sampling_params []", {"token_ids": api.PROMPT, "sampling_params": []}),
    ("body []", {"__list__": True}),
    ("stream 'maybe'", api.body(2, top={"stream": "maybe"})),
]


@checks("ERR-001")
def test_unknown_output_mode(tito: Session) -> None:
    for mode in ("bogus", None):
        api.rejected(tito, api.body(2, top={"output_mode": mode}), what=f"output_mode {mode!r}")


@checks("ERR-002")
def test_error_body_shape(tito: Session) -> None:
    for what, payload in (("an invalid generate", api.invalid()),):
        reply = tito.client.post(api.GENERATE, payload)
        stated = stated_error(reply.status, reply.body)
        if stated is not None:
            fail(f"{what} was answered HTTP {reply.status} with error.code {stated}")
        if reply.status < 400:
            fail(f"{what} was accepted ({reply.status}); no error body to judge")
        data = reply.json()
        api.validate("ErrorResponse", data, f"error body of {what}")
        if data["error"].get("code") != reply.status:
            fail(f"{what}: error.code {data['error'].get('code')} != HTTP {reply.status}")


@checks("ERR-002", after_all=True)
def test_every_error_states_its_status(tito: Session) -> None:
    """Every whole answer of the run whose body states an error code, on any route (render,
    derender, abort, the probe's), states its own HTTP status: a render rejected with a 200
    or a 422 carrying a 400's body is as misstated as a generate."""
    seen = tito.observed.get(MISSTATED, [])
    if seen:
        what, answer = seen[0]
        more = f" (and {len(seen) - 1} more answers)" if len(seen) > 1 else ""
        fail(f"{what} was answered HTTP {answer['status']} with error.code {answer['code']}{more}")


@checks("ERR-003")
def test_validation_is_400(tito: Session) -> None:
    api.rejected(tito, api.invalid(), what="an invalid generate (bad values)", exact=True)
    reply = tito.client.post(api.GENERATE, api.body(2, temperature="x"))
    if reply.status < 500:  # a 5xx for a wrong type is ERR-008's failure
        api.status_is(reply, 400, "an invalid generate (wrong types)")
    # vLLM answers every route's validation errors with its one handler: the other routes too
    names = tito.features.names()
    others: list[tuple[str, dict[str, Any], str]] = []
    if "abort" in names:
        others.append((api.ABORT, {}, "abort (no request_ids)"))
    if "legacy-abort" in names:
        others.append((api.LEGACY_ABORT, {}, "/abort_requests (no request_ids)"))
    if "render" in names:
        others.append((DERENDER, {"generate_responses": "tito"}, "derender (a string)"))
    for path, payload, what in others:  # accepting one is another requirement's failure
        reply = tito.client.post(path, payload)
        if 400 < reply.status < 500:
            api.status_is(reply, 400, f"an invalid {what}")


@checks("ERR-004")
def test_unknown_fields_ignored(tito: Session) -> None:
    payload = api.body(
        2, output_kind=2, skip_clone=True, tito_unknown=1, top={"tito_unknown_top": {"a": 1}}
    )
    api.generate(tito, payload, what="generate with unknown keys")


@checks("ERR-005")
def test_malformed_json(tito: Session) -> None:
    api.rejected(
        tito,
        None,
        content=b'{"token_ids": [1, 2,',
        what="malformed JSON",
        headers={"Content-Type": "application/json"},
    )


@checks("ERR-006")
def test_wrong_content_type(tito: Session) -> None:
    api.rejected(
        tito,
        None,
        content=api.dumps_body(api.body(2)),
        what="text/plain body",
        headers={"Content-Type": "text/plain"},
    )


@checks("ERR-008")
def test_malformed_fields_4xx(tito: Session) -> None:
    for what, payload in BAD_FIELDS:
        if payload.get("__list__"):
            reply = tito.client.post(api.GENERATE, [1, 2, 3])
        else:
            reply = tito.client.post(api.GENERATE, payload)
        if not 400 <= reply.status < 500:
            fail(f"{what}: answered HTTP {reply.status}, expected a 4xx")


@checks("ERR-009")
def test_nullable_nulls(tito: Session) -> None:
    payload = api.body(
        2,
        stop=None,
        prompt_logprobs=None,
        logprobs=None,
        top={
            "features": None,
            "cache_salt": None,
            "kv_transfer_params": None,
            "stream_options": None,
            "return_token_ids": None,
        },
    )
    api.generate(tito, payload, what="generate with explicit nulls")


@checks("ERR-010")
def test_max_tokens_zero(tito: Session) -> None:
    api.rejected(tito, api.body(0), what="max_tokens 0")


@checks("ERR-007", last=True)
def test_out_of_vocabulary(tito: Session) -> None:
    api.rejected(tito, api.body(2, prompt=[10, 1_000_000_000]), what="token id 1e9")
    health = tito.client.get("/health")  # with the key, if any: that it is open is AUTH-005's
    api.status_is(health, 200, "/health after an out-of-vocabulary request")
