"""Bad input: a clear 4xx with vLLM's error body, never a 5xx."""

from __future__ import annotations

from typing import Any

from conformance import api
from conformance.registry import checks
from conformance.server.features import DERENDER
from conformance.session import MISSTATED, Session
from conformance.tito.semantics import fail
from conformance.wire.exchange import stated_error

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
