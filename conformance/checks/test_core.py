"""Core generate, the request: which fields it takes and what each does (the answer's own
requirements are `test_response`'s)."""

from __future__ import annotations

from conformance import api
from conformance.grounds import builds_on, gate
from conformance.registry import checks
from conformance.requirements.model import MUST, Feature, Requirement, fuzz
from conformance.session import Session
from conformance.tito.semantics import choices_of, fail, ids_of
from conformance.tito.streamed import index_of

REQUIREMENTS = [
    Requirement(
        "GEN-001",
        MUST,
        Feature.CORE,
        "POST /inference/v1/generate is the token-in/token-out (TITO) HTTP endpoint: it takes "
        "prompt token IDs and returns generated token IDs",
        "a minimal request answers 200 with a body valid against GenerateResponse",
        expected_status=200,
        fuzz=(fuzz(130, operations=("generate",)),),
        diff=("basic",),
    ),
    Requirement(
        "GEN-002",
        MUST,
        Feature.CORE,
        "and finish_reason/stop_reason, with no detokenization.",
        "a tokens-mode response carries no text",
        needs=("generate",),
        fields=("text",),
    ),
    Requirement(
        "GEN-003",
        MUST,
        Feature.CORE,
        "--enable-scale-out registers it, with /render, /derender and "
        "/inference/v1/abort_requests.",
        "a server claimed or detected as scale-out serves generate",
        expected_status=200,
        needs=("scale-out",),
        anchor="scale-out",
    ),
    Requirement(
        "GEN-REQ-001",
        MUST,
        Feature.CORE,
        "Required `list[int]`: the already-templated prompt.",
        "a request without token_ids, or with non-integer ids, is a 400",
        expected_status=400,
        needs=("generate",),
        diff=("token-ids-not-list", "token-ids-missing"),
    ),
    Requirement(
        "GEN-REQ-002",
        MUST,
        Feature.CORE,
        "Non-empty, no negative IDs.",
        "an empty token_ids is a 400",
        expected_status=400,
        needs=("generate",),
        diff=("empty-token-ids",),
    ),
    Requirement(
        "GEN-REQ-003",
        MUST,
        Feature.CORE,
        "Non-empty, no negative IDs.",
        "a negative token id is a 400",
        expected_status=400,
        needs=("generate",),
        diff=("negative-token-ids",),
    ),
    Requirement(
        "GEN-REQ-004",
        MUST,
        Feature.CORE,
        "Required. Any SamplingParams field, e.g. `max_tokens`, `temperature`, `logprobs`, "
        "`stop_token_ids`.",
        "a request without sampling_params is a 400",
        expected_status=400,
        needs=("generate",),
        diff=("sampling-missing",),
    ),
    Requirement(
        "GEN-REQ-005",
        MUST,
        Feature.CORE,
        "Any SamplingParams field, e.g. `max_tokens`",
        "max_tokens bounds the output; reaching it gives finish_reason length",
        needs=("generate",),
        diff=("ignore-eos-length", "max-tokens-over-context"),
    ),
    Requirement(
        "GEN-REQ-006",
        MUST,
        Feature.CORE,
        "Any SamplingParams field, e.g. `max_tokens`, `temperature`",
        "temperature 0 samples the most likely token (rank 1) at every step",
        needs=("generate",),
        diff=("logprobs-3-greedy", "greedy"),
    ),
    Requirement(
        "GEN-REQ-007",
        MUST,
        Feature.CORE,
        "Any SamplingParams field",
        "sampling with the same seed gives the same tokens",
        needs=("generate",),
        diff=("seeded",),
    ),
    Requirement(
        "GEN-REQ-008",
        MUST,
        Feature.CORE,
        "Any SamplingParams field",
        "n > 1 returns n choices indexed 0..n-1",
        needs=("generate",),
        diff=("n2-logprobs-2", "n3-ignore-eos"),
    ),
    Requirement(
        "GEN-REQ-009",
        MUST,
        Feature.CORE,
        "Without `max_tokens`, the server applies its own default (as on the OpenAI endpoints), "
        "not 16.",
        "without max_tokens the output may run past 16 tokens",
        needs=("generate",),
        diff=("default-max-tokens",),
    ),
    Requirement(
        "GEN-REQ-010",
        MUST,
        Feature.CORE,
        '`"tokens"` (default) or `"text"`, see Output modes.',
        "a request without output_mode is answered in tokens mode",
        needs=("generate",),
    ),
    Requirement(
        "GEN-REQ-011",
        MUST,
        Feature.CORE,
        "Echo the final prompt IDs as `prompt_token_ids`.",
        "return_token_ids echoes the prompt as prompt_token_ids",
        needs=("generate",),
        diff=("n2-return-token-ids-prompt-logprobs", "return-token-ids"),
    ),
    Requirement(
        "GEN-REQ-012",
        MUST,
        Feature.CORE,
        "`request_id`, `model`, `cache_salt`, `priority`, `kv_transfer_params`, "
        "`ec_transfer_params`\tOptional.",
        "the optional fields are accepted when sent with valid values",
        expected_status=200,
        needs=("generate",),
        fuzz=(fuzz(111, checks=("positive_data_acceptance",), operations=("generate",)),),
        diff=("sampling-knobs", "priority", "cache-salt"),
    ),
]


def basic(s: Session) -> dict:
    return s.remember("basic", lambda: api.generate(s, api.body(8), what="minimal generate"))


@checks("GEN-001")
def test_minimal_generate(tito: Session) -> None:
    gate.need_generate(tito, judged_here=True, deciding=("GEN-001",))
    choices = basic(tito).get("choices")
    if not choices:  # the schema lets a list be empty; an answer of no choice returns no ids
        fail(f"a minimal generate (n 1) answered choices {choices!r}: no generated token IDs")


@checks("GEN-002")
def test_tokens_mode_has_no_text(tito: Session) -> None:
    # output_mode sent explicitly: the default mode is GEN-REQ-010's (old servers ignore it)
    data = api.generate(tito, api.body(8, top={"output_mode": "tokens"}), what="tokens mode")
    for i, choice in enumerate(choices_of(data)):
        if "text" in choice:
            fail(f"choice {i} of a tokens-mode response carries text {choice['text']!r:.80}")


@checks("GEN-003")
def test_scale_out_serves_generate(tito: Session) -> None:
    basic(tito)


@checks("GEN-REQ-001")
def test_token_ids_required(tito: Session) -> None:
    api.rejected(tito, {"sampling_params": {"max_tokens": 2}}, what="no token_ids")
    api.rejected(
        tito, api.body(2, prompt=None) | {"token_ids": ["a", "b"]}, what="string token_ids"
    )


@checks("GEN-REQ-002")
def test_empty_token_ids(tito: Session) -> None:
    api.rejected(tito, api.body(2) | {"token_ids": []}, what="token_ids []")


@checks("GEN-REQ-003")
def test_negative_token_ids(tito: Session) -> None:
    api.rejected(tito, api.body(2) | {"token_ids": [10, -1, 12]}, what="token_ids with -1")


@checks("GEN-REQ-004")
def test_sampling_params_required(tito: Session) -> None:
    api.rejected(tito, {"token_ids": api.PROMPT}, what="no sampling_params")


def max_tokens_case(s: Session) -> list[dict]:
    return s.remember(
        "max-tokens", lambda: choices_of(api.generate(s, api.body(5, ignore_eos=True)))
    )


@checks("GEN-REQ-005", builds_on=("GEN-RESP-003",))
def test_max_tokens_bounds_output(tito: Session) -> None:
    for choice in max_tokens_case(tito):
        ids, reason = ids_of(choice), choice.get("finish_reason")
        if reason != "length":  # a reason misnamed everywhere is GEN-RESP-002's
            builds_on(tito, "GEN-RESP-002")
        if len(ids) != 5 or reason != "length":
            fail(
                f"max_tokens 5 with ignore_eos gave {len(ids)} tokens, finish_reason "
                f"{reason!r} (expected 5, 'length')"
            )


@checks("GEN-REQ-006")
def test_greedy_picks_rank_one(tito: Session) -> None:
    k = tito.limits.logprobs(1)  # 0 still ranks the sampled token (--max-logprobs 0)
    data = api.generate(tito, api.body(8, logprobs=k, ignore_eos=True))
    choice = choices_of(data)[0]
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    entries = [e for e in content if isinstance(e, dict)] if isinstance(content, list) else []
    if not entries:  # what the entries are is LOGP-001's and SCHEMA-GEN-001's
        fail(f"temperature 0 with logprobs {k} returned no logprobs to judge greediness by")
    for i, entry in enumerate(entries):
        if entry.get("rank") not in (1, None):
            fail(
                f"temperature 0: token {i} ({entry.get('token_id')}) has rank "
                f"{entry.get('rank')}, not 1"
            )


@checks("GEN-REQ-007")
def test_seed_reproducible(tito: Session) -> None:
    first = choices_of(api.generate(tito, api.seeded(12, ignore_eos=True)))[0]["token_ids"]
    second = choices_of(api.generate(tito, api.seeded(12, ignore_eos=True)))[0]["token_ids"]
    if first != second:
        fail(f"the same seed gave different tokens: {first} vs {second}")


@checks("GEN-REQ-008", n=3)
def test_n_choices(tito: Session) -> None:
    data = api.generate(tito, api.seeded(4, n=3))
    indexes = sorted(index_of(c.get("index", -1)) for c in choices_of(data))
    if indexes != [0, 1, 2]:
        fail(f"n=3 returned choices with indexes {indexes}")


@checks("GEN-REQ-009", room=17)
def test_default_max_tokens_not_16(tito: Session) -> None:
    payload = api.body(None, ignore_eos=True) | {"stream": True}
    rid = tito.rid("default-max")
    deadline = max(tito.config.stream_deadline, tito.timeout_for(17))
    with tito.client.stream(
        api.GENERATE, payload, headers={"X-Request-Id": rid}, deadline=deadline
    ) as st:
        if st.status != 200:
            fail(f"stream without max_tokens answered {st.status}: {st.read_body().body[:200]!r}")
        got = api.read_stream(st, stop_after_tokens=17, s=tito)
        named = next((c.get("request_id") for c in got.chunks if c.get("request_id")), None)
        if tito.features.abort:  # the rest of a context-long request is not needed
            target = named if isinstance(named, str) else f"generate-tokens-{rid}"
            tito.client.post(api.ABORT, {"request_ids": [target]})
    tokens = sum(len(c.token_ids) for c in got.choices().values())
    finishes = [c.finish_reason for c in got.choices().values()]
    if tokens <= 16 and "length" in finishes:
        builds_on(tito, "STREAM-003")  # counted from the deltas: where they lose tokens
        fail(
            f"without max_tokens the output stopped at {tokens} tokens with finish_reason "
            f"length: the server applied 16"
        )


@checks("GEN-REQ-010")
def test_default_output_mode_is_tokens(tito: Session) -> None:
    data = basic(tito)
    if "output_mode" in data:  # echoed: the echo says which mode answered
        if data["output_mode"] != "tokens":
            fail(f"a request without output_mode was answered in mode {data['output_mode']!r}")
    elif any("text" in c for c in choices_of(data)):  # no echo (older servers): no text
        fail("a request without output_mode was answered with text")


@checks("GEN-REQ-011")
def test_return_token_ids(tito: Session) -> None:
    data = api.generate(tito, api.body(2, top={"return_token_ids": True}))
    if data.get("prompt_token_ids") != api.PROMPT:
        fail(
            f"return_token_ids: prompt_token_ids is {data.get('prompt_token_ids')!r}, "
            f"expected {api.PROMPT}"
        )


@checks("GEN-REQ-012")
def test_optional_fields_accepted(tito: Session) -> None:
    optional = {
        "request_id": tito.rid("optional"),
        "cache_salt": "tito-salt",
        "priority": 0,
        "kv_transfer_params": None,
        "ec_transfer_params": None,
    }
    if tito.features.model:
        optional["model"] = tito.features.model
    api.generate(tito, api.body(2, top=optional), what="generate with the optional fields")
