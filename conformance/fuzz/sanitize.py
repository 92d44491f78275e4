"""Keep generated cases cheap and, in positive mode, truly acceptable.

The spec cannot say everything vLLM checks after validation (a served model name, `n` at most
`max_num_seqs`, no stop strings without a tokenizer, ids inside the vocabulary, ...). A
positive case that breaks one of those rules is rejected for a reason the schema does not
express, so positive cases are nudged inside those rules here; every nudge names the rule.
In both modes `max_tokens`, `n` and the prompt length are bounded so streams stay short, and
token ids at or above the vocabulary are folded back inside (the out-of-vocabulary group sends
them on purpose, separately). A nudge never touches what made a negative case negative: it
only rewrites values the schema accepts anyway (schemathesis revalidates the case after it).
"""

from __future__ import annotations

import functools
import zlib
from typing import Any

import openapi
from conformance.fuzz.settings import ServerFacts
from conformance.tito.outputs import lean

UNKNOWN_KEY = "x_tito_fuzz_unknown"
"""Added to some positive generate bodies: "Unknown keys are allowed and ignored"."""

DROP_ALWAYS = (
    # vLLM-side rules the schema does not express; each is a 400 (or a 404) on a valid body.
    "features",  # placeholder ranges must fit the prompt, modalities must agree
    "content_parts",  # needs a multimodal model
    "kv_transfer_params",  # passed to msgpack: ints wider than 64 bits are a 400
    "ec_transfer_params",
    "reasoning_parser_kwargs",  # extra="forbid" model
)
DROP_SAMPLING = (
    "structured_outputs",  # exactly one constraint kind
    "prompt_logprob_token_ids",  # 400 with stream and on CPU
    "prompt_logprob_start",
    "logprob_token_ids",
    "logit_bias",  # keys must be token ids
    "extra_args",  # msgpack, as above
    "thinking_token_budget",  # needs a reasoning parser
    "output_kind",  # an enum in vLLM
    "allowed_token_ids",  # an empty list leaves nothing to sample
    "bad_words",  # needs a tokenizer
)


def _is_int(value: Any) -> bool:
    return type(value) is int


def integral_floats_to_ints(value: Any) -> Any:
    """7.0 -> 7 throughout. JSON Schema counts 7.0 as an integer and vLLM's pydantic accepts it;
    the mock does not (reported as a mock bug), so positive cases send plain integers."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, list):
        return [integral_floats_to_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: integral_floats_to_ints(v) for k, v in value.items()}
    return value


def fold_ids(values: Any, bound: int) -> Any:
    """Ids at or above `bound` folded inside, an integral float too (pydantic's lax mode reads
    645423.0 as the id 645423); anything else (negatives, non-numbers) untouched."""
    if not isinstance(values, list):
        return values
    return [v % bound if _id_like(v) and v >= bound else v for v in values]


def _id_like(value: Any) -> bool:
    return _is_int(value) or (isinstance(value, float) and value.is_integer())


def bound_generate(body: Any, facts: ServerFacts, max_tokens: int, max_prompt: int) -> None:
    """Both modes: short prompts, few tokens, few choices, ids inside the vocabulary."""
    if not isinstance(body, dict):
        return
    ids = body.get("token_ids")
    if isinstance(ids, list):
        body["token_ids"] = fold_ids(
            ids[:max_prompt] if len(ids) > max_prompt else ids, facts.id_bound
        )
    sp = body.get("sampling_params")
    if not isinstance(sp, dict):
        return
    mt = sp.get("max_tokens")
    if mt is None:  # absent or null (both valid): the server default runs to the context's end
        sp["max_tokens"] = max_tokens
    elif isinstance(mt, int) and _is_int(mt) and mt > max_tokens:
        sp["max_tokens"] = 1 + mt % max_tokens
    n = sp.get("n")
    if isinstance(n, int) and _is_int(n) and n > 4:
        sp["n"] = 1 + n % 4
    for key in ("stop_token_ids", "allowed_token_ids"):
        if key in sp:
            sp[key] = fold_ids(sp[key], facts.id_bound)


def accept_generate(
    body: dict[str, Any], facts: ServerFacts, max_tokens: int, header_rank: str | None
) -> None:
    """Positive mode: the vLLM rules behind a 400 that the schema cannot state."""
    for key in DROP_ALWAYS:
        body.pop(key, None)
    if body.get("model") is not None:  # must be a served name (else 404)
        body["model"] = facts.model
    if body.get("priority"):  # needs --scheduling-policy priority
        body["priority"] = 0
    if not facts.has_tokenizer:
        body["output_mode"] = "tokens"  # "output_mode='text' requires a tokenizer"
    sp = body.setdefault("sampling_params", {})
    for key in DROP_SAMPLING:
        sp.pop(key, None)
    if sp.get("max_tokens") is None:  # the server default would run to the context end
        sp["max_tokens"] = max_tokens
    if sp.get("min_tokens", 0) > sp["max_tokens"]:  # "min_tokens must be <= max_tokens"
        sp["min_tokens"] = sp["max_tokens"]
    for key in ("logprobs", "prompt_logprobs"):
        value = sp.get(key)
        # -1 asks for the whole vocabulary; either is over the learned --max-logprobs
        if value == -1 or (_is_int(value) and value > facts.max_logprobs):
            sp[key] = facts.max_logprobs
    within_limits(body, sp, facts)
    body["sampling_params"] = lean(body, facts.limits.bytes_per_token)["sampling_params"]
    sp = body["sampling_params"]
    if not facts.has_tokenizer or sp.get("detokenize") is False:
        sp.pop("stop", None)  # stop strings need detokenization
    temperature = sp.get("temperature", 1.0)
    if sp.get("n", 1) > 1 and temperature < 1e-5:  # "n must be 1 when using greedy sampling"
        sp["n"] = 1
    if _crc(body) % 5 == 0:
        body[UNKNOWN_KEY] = "ignored"


def within_limits(body: dict[str, Any], sp: dict[str, Any], facts: ServerFacts) -> None:
    """A positive case stays inside what the probe learned of this server's configuration:
    `n` at most its max_num_seqs, prompt plus max_tokens inside its context. Past either, a
    correct server answers 400, rightly."""
    limits = facts.limits
    n = sp.get("n")
    if limits.max_n is not None and isinstance(n, int) and n > limits.max_n:
        sp["n"] = limits.max_n
    if limits.max_model_len is None:
        return
    ids = body.get("token_ids")
    if isinstance(ids, list) and len(ids) >= limits.max_model_len:
        body["token_ids"] = ids[: max(1, limits.max_model_len // 2)]
    room = limits.room(len(body["token_ids"]) if isinstance(body.get("token_ids"), list) else 0)
    if room is not None and _is_int(sp.get("max_tokens")) and sp["max_tokens"] > room:
        sp["max_tokens"] = max(1, room)
    if _is_int(sp.get("min_tokens")) and sp["min_tokens"] > sp.get("max_tokens", 0):
        sp["min_tokens"] = sp["max_tokens"]


def accept_headers(headers: dict[str, Any]) -> None:
    """An integer X-data-parallel-rank other than 0 is out of range on a one-rank server."""
    for name in list(headers):
        if name.lower() == "x-data-parallel-rank":
            try:
                rank = int(headers[name])
            except (TypeError, ValueError):
                continue
            if rank != 0:
                headers[name] = "0"


@functools.cache
def spec_field_names() -> frozenset[str]:
    """Every property name the spec declares anywhere (`min_tokens`, `temperature`, ...)."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                names.update(props)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(openapi.load_spec()["components"]["schemas"])
    return frozenset(names)


def drop_real_extras(body: dict[str, Any], described: tuple[str, ...]) -> None:
    """An "other field" of an OpenAI request that is really one of vLLM's typed fields.

    The render schemas describe only what render uses and allow the rest, so a drawn extra key
    may be a real field name (hypothesis draws names from the code's own constants) with a
    value of the wrong type: `min_tokens: {}` is a 400 in vLLM 0.32, for a reason the schema
    cannot say. Keys no schema names stay: unknown keys are ignored.
    """
    for key in [k for k in body if k not in described and k in spec_field_names()]:
        del body[key]


def accept_render(body: dict[str, Any], facts: ServerFacts, max_prompt: int) -> None:
    """Render: token prompts inside the vocabulary, a served model, text only with a tokenizer."""
    drop_real_extras(body, ("model", "prompt"))
    if body.get("model") is not None:
        body["model"] = facts.model
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], list):
        body["prompt"] = [fold_ids(p[:max_prompt], facts.id_bound) or [1] for p in prompt[:4]]
    elif isinstance(prompt, list) and (not prompt or _is_int(prompt[0])):
        body["prompt"] = fold_ids(prompt[:max_prompt], facts.id_bound) or [1]
    elif not facts.has_tokenizer:  # "Tokenizer not available when `skip_tokenizer_init=True`"
        body["prompt"] = [1, 2, 3]
    elif isinstance(prompt, list):
        body["prompt"] = [p or "x" for p in prompt[:4]] or ["x"]
    elif not prompt:
        body["prompt"] = "x"
    for key in ("max_tokens", "n", "logprobs", "stream", "echo", "suffix"):
        body.pop(key, None)


def accept_chat(body: dict[str, Any], facts: ServerFacts) -> None:
    """Chat render needs messages with a role and text content."""
    drop_real_extras(body, ("model", "messages"))
    if body.get("model") is not None:
        body["model"] = facts.model
    messages = body.get("messages") or [{}]
    body["messages"] = [
        {"role": "user", "content": str(m.get("content", "hi")) or "hi"} for m in messages[:4]
    ]


def _crc(value: Any) -> int:
    return zlib.crc32(repr(value).encode())


def accept_derender(body: dict[str, Any], facts: ServerFacts, chat: bool) -> None:
    """Derender: the checks vLLM runs after its (lax) input models, which the schema cannot
    state: parallel list lengths, non-empty token_ids, one choice per stream chunk, decodable
    ids, a chat_request with messages, a completion_request with a prompt; and no negative
    counts (vLLM takes them and echoes them into a usage the response schema rejects)."""
    if body.get("model") is not None:
        body["model"] = facts.model
    request = body.get("chat_request")
    if isinstance(request, dict):  # "messages": a list of {role, content}
        accept_chat(request, facts)
        body["chat_request"] = {k: v for k, v in request.items() if k in ("model", "messages")}
    if isinstance(body.get("completion_request"), dict):  # "Either prompt or prompt_embeds"
        body["completion_request"] = {"prompt": "x"}
    streamed = body.get("stream") is True
    if streamed or chat:
        if _is_int(body.get("prompt_tokens")):
            body["prompt_tokens"] = abs(body["prompt_tokens"])
        if "prompt_token_ids" in body:
            body["prompt_token_ids"] = _ids(body["prompt_token_ids"], facts)
    if streamed:
        chunk = body.get("generate_chunk")
        if isinstance(chunk, dict):
            chunk["choices"] = chunk.get("choices", [])[:1]  # "at most one choice per chunk"
            _accept_generated(chunk, facts, need_tokens=False)
        state = body.get("stream_state")
        if isinstance(state, dict):  # a detokenizer window must match the tokens it holds
            keep = ("role_sent", "logprob_text_offset")
            body["stream_state"] = {k: v for k, v in state.items() if k in keep}
        return
    if chat:
        _accept_generated(body.get("generate_response"), facts, need_tokens=True)
        return
    responses = body.get("generate_responses")
    if not isinstance(responses, list):
        return
    for resp in responses:
        _accept_generated(resp, facts, need_tokens=True)
    n = len(responses)  # "prompt_tokens length (N) must equal generate_responses length (M)"
    counts = body.get("prompt_tokens")
    if isinstance(counts, list):
        body["prompt_tokens"] = [abs(counts[i]) if i < len(counts) else 0 for i in range(n)]
    lists = body.get("prompt_token_ids")
    if isinstance(lists, list):
        body["prompt_token_ids"] = [
            _ids(lists[i], facts) if i < len(lists) else None for i in range(n)
        ]


def _ids(values: Any, facts: ServerFacts) -> Any:
    """Decodable ids: inside the vocabulary, not negative (a negative id does not decode)."""
    if not isinstance(values, list):
        return values
    return [abs(v) % facts.id_bound if _is_int(v) else v for v in values]


def _accept_generated(resp: Any, facts: ServerFacts, need_tokens: bool) -> None:
    """One generate response or chunk as derender can decode it."""
    if not isinstance(resp, dict):
        return
    if isinstance(resp.get("prompt_token_ids"), list):
        resp["prompt_token_ids"] = _ids(resp["prompt_token_ids"], facts)
    usage = resp.get("usage")
    if isinstance(usage, dict):
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            if _is_int(usage.get(key)):
                usage[key] = abs(usage[key])
    for choice in resp.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        ids = _ids(choice.get("token_ids"), facts)
        if need_tokens and not ids:  # "choice I has empty or null token_ids"
            ids = [1]
        if ids is not None or "token_ids" in choice:
            choice["token_ids"] = ids
        content = (choice.get("logprobs") or {}).get("content")
        for entry in content or []:
            entry["token_id"] = _ids([entry["token_id"]], facts)[0]
            top = entry.get("top_logprobs") or []
            entry["top_logprobs"] = top[: facts.max_logprobs]  # "exceeds max_logprobs"
            for alt in entry["top_logprobs"]:
                alt["token_id"] = _ids([alt["token_id"]], facts)[0]
