"""vLLM releases on the TITO wire: what 0.30, 0.31, 0.33 and 0.34 do differently from 0.32.

`tito-mock --mock-vllm-version 0.30|0.31|0.32|0.33|0.34` picks one row of `RELEASES` (0.32, the
spec's release, is the default). The mock builds 0.32's answer as always; a release is data
read at a few fixed places, never a version test:

- which routes `app.py` registers (`abort_route`, `gated`, dev mode's `/pause` where a paused
  engine refuses requests: `pause_rejects`);
- the request fields the release does not know, dropped before parsing as pydantic ignores
  them (`unknown_fields`), and the logprob shape derender accepts (`derender_legacy`);
- the rows of the validate table it runs (`rules_off`, `rules_on`: 0.34 scores
  `prompt_logprob_token_ids` and takes `prompt_logprob_start` with `prompt_logprobs`), the
  tokens-only stop-string error (`tokens_only_stop`) and how the abort body is read
  (`abort_model`: 0.34's pydantic model);
- how many `top_logprobs` the sampler keeps (`top_logprobs_cut`: 0.33 sends the top k after
  the sampled token), and the null keys of a usage, a parsed message and the OpenAI-shaped
  choices and chunks (`usage_details`, `message_keys`, `choice_nulls`, `chunk_nulls`);
- what render puts into a GenerateRequest (`render_keys`, `render_echo`, chat's
  `parse_context` where the keys have one, `empty_tools_rejected`, `render_max_tokens_stated`);
- the key sets and orders of its answers and whether an aborted stream sends its abort chunk:
  rewrites of the finished answer, named transformers in `transforms/releases.py` listed in
  `rewrites` (0.32 lists none, so the correct 0.32 mock pays the same empty loop as before);
- what 0.33 and 0.34 add: the output modes generate accepts (`output_modes`: "derender",
  answered by `derender_mode.py`), whether it streams (`derender_stream`), the request fields
  newer than 0.32 (`new_fields`: `parse_context`, with `parse_context_keys`, checked by
  `parse_context.py`).

Source: real 0.30.0 and 0.31.0 servers (`vllm-versions.md`, section 2); 0.33.0 and 0.34.0 from
their wheels' `vllm/entrypoints/scale_out/...` (`tito-conformance drift --vllm-version 0.34.0`
caches them), checked against each release's own API server over the simulated engine core
(`tito-mock --real-frontend 0.34.0`) with `tito-conformance diff`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from mock_server.wire.errors import ApiError, ValidationFailure, bad_request
from mock_server.wire.errors import validation_item as item

TOKENS_ONLY_STOP = (
    "stop strings are not supported on a --tokens-only server because detokenization is "
    "disabled. Check stop strings on the coordinator, or use stop_token_ids."
)
DETOKENIZE_STOP = (
    "stop strings are only supported when detokenize is True. Set detokenize=True to use stop."
)

_BODY_032 = (
    "request_id", "model", "created", "usage", "prompt_logprobs", "prompt_token_id_logprobs",
    "prompt_token_ids", "mm_placeholders", "metrics", "kv_transfer_params", "ec_transfer_params",
    "output_mode", "choices",
)  # fmt: skip
_CHOICE_032 = (
    "index", "finish_reason", "stop_reason", "token_ids", "routed_experts", "sampling_mask",
    "weight_versions", "text", "logprobs",
)  # fmt: skip
_BODY_030 = (
    "request_id", "model", "created", "choices", "usage", "prompt_logprobs", "prompt_token_ids",
    "mm_placeholders", "kv_transfer_params", "ec_transfer_params",
)  # fmt: skip
_BODY_031 = (
    "request_id", "model", "created", "choices", "usage", "prompt_logprobs",
    "prompt_token_id_logprobs", "prompt_token_ids", "mm_placeholders", "metrics",
    "kv_transfer_params", "ec_transfer_params",
)  # fmt: skip
_CHOICE_030 = ("index", "logprobs", "finish_reason", "token_ids", "routed_experts", "sampling_mask")
_CHUNK_030 = ("request_id", "choices", "usage", "prompt_token_ids")
_RENDER_031 = (
    "request_id", "token_ids", "token_offsets", "features", "content_parts", "sampling_params",
    "model", "return_token_ids", "stream", "stream_options", "cache_salt", "priority",
    "kv_transfer_params", "ec_transfer_params",
)  # fmt: skip
_RENDER_030 = (*_RENDER_031[:2], "assistant_tokens_mask", *_RENDER_031[2:])
_RENDER_032 = (
    *_RENDER_031[:7], "reasoning_ended", "reasoning_parser_kwargs", "return_token_ids",
    "output_mode", *_RENDER_031[8:],
)  # fmt: skip
_RENDER_033 = (*_RENDER_032[:11], "parse_context", *_RENDER_032[11:])
_USAGE_DETAILS = ("prompt_tokens_details", "completion_tokens_details")
_MESSAGE_032 = (
    "role", "content", "refusal", "annotations", "audio", "function_call", "reasoning",
)  # fmt: skip
"""`ChatMessage` as 0.32 and 0.33 dump it (`tool_calls` popped when empty); 0.34 drops a null
`annotations` (`exclude_if`)."""
_PARSE_CONTEXT_033 = (
    "tools", "tool_choice", "parallel_tool_calls", "include_reasoning", "chat_template_kwargs",
    "history_tool_call_cnt",
)  # fmt: skip


@dataclass(frozen=True)
class Release:
    """One vLLM release's TITO surface, as far as it differs from 0.32.

    `body_keys`, `choice_keys`, `chunk_keys`: the keys of a non-streamed answer, of its choices
    (streamed ones too) and of a stream chunk, in the order sent; a key of 0.32 not listed is
    not sent. `rewrites`: the names of its answer transformers (`transforms/releases.py`).
    """

    version: str
    logprobs_format: str = "integer"  # "legacy": `"token": "token_id:N"`, no rank
    top_logprobs_cut: bool = True  # tokens/text top_logprobs cut to max(k, 1); False: uncut
    usage_details: tuple[str, ...] = _USAGE_DETAILS  # the null detail keys a usage carries
    abort_route: bool = True  # POST /inference/v1/abort_requests
    abort_model: bool = False  # its body is pydantic's AbortRequestsRequest (0.34)
    gated: bool = True  # without the flags: 403 (True) or the routes are not registered
    unknown_fields: tuple[str, ...] = ()  # generate fields it ignores (pydantic extra=ignore)
    unknown_sampling: tuple[str, ...] = ()  # sampling_params fields it ignores
    flat_prompt_logprob_ids: bool = False  # prompt_logprob_token_ids is list[int] (0.31)
    render_keys: tuple[str, ...] = _RENDER_032  # the rendered GenerateRequest's keys, in order
    render_max_tokens_stated: bool = False  # a max_tokens of 16 is sent (last), not left out
    render_echo: tuple[str, ...] = ()  # request fields render copies over (0.33: return_token_ids)
    tokens_only_stop: str = TOKENS_ONLY_STOP
    pause_rejects: bool = False  # dev /pause: new requests are 503s until /resume (0.33+)
    empty_tools_rejected: bool = True  # chat `tools: []` is a 400; False: read as no tools
    rules_off: tuple[str, ...] = ()  # rows of 0.32's validate table it does not run
    rules_on: tuple[str, ...] = ()  # rows it runs that 0.32 does not (`validation.OPTIONAL`)
    derender_legacy: bool = False  # derender reads the legacy logprob shape only
    body_keys: tuple[str, ...] = _BODY_032
    choice_keys: tuple[str, ...] = _CHOICE_032
    chunk_keys: tuple[str, ...] = ()
    rewrites: tuple[str, ...] = ()
    output_modes: tuple[str, ...] = ("tokens", "text")  # GenerateRequest.output_mode's Literal
    derender_stream: bool = False  # output_mode "derender" with stream (0.34); else a 400
    message_keys: tuple[str, ...] = _MESSAGE_032  # a derender answer's `message`, in dump order
    choice_nulls: tuple[str, ...] = ()  # OpenAI-shaped choices end with (0.33: weight_versions)
    chunk_nulls: tuple[str, ...] = ()  # and their chunks (0.33: kv_transfer_params)
    new_fields: tuple[str, ...] = ()  # generate fields 0.32 does not know (`parse_context`)
    parse_context_keys: tuple[str, ...] = ()  # ParseContext's fields; others: extra

    @property
    def short(self) -> str:
        return self.version.rsplit(".", 1)[0]

    def rules(self, rules: frozenset[str]) -> frozenset[str]:
        """The validate table's rows in force (`rules`, a defect's set) as this release runs
        them."""
        if not (self.rules_off or self.rules_on):
            return rules
        return rules - frozenset(self.rules_off) | frozenset(self.rules_on)

    def stop_error(self) -> ApiError:
        """The 400 of a tokens-only server given stop strings (0.30: SamplingParams' text, as
        detokenize is forced off; param null, no `(parameter=...)` suffix, seen live)."""
        return bad_request(self.tokens_only_stop)

    def known(self, body: Any) -> Any:
        """The generate body as the release's request model sees it: unknown fields dropped
        (top level and in sampling_params), and 0.31's flat prompt_logprob_token_ids typed."""
        if not self.unknown_fields or not isinstance(body, dict):
            return body
        body = {k: v for k, v in body.items() if k not in self.unknown_fields}
        sp = body.get("sampling_params")
        if isinstance(sp, dict):
            if self.unknown_sampling:
                sp = {k: v for k, v in sp.items() if k not in self.unknown_sampling}
                body["sampling_params"] = sp
            ids = sp.get("prompt_logprob_token_ids")
            if self.flat_prompt_logprob_ids and isinstance(ids, list):
                loc = "body.sampling_params.prompt_logprob_token_ids"
                errors = [
                    item("int_type", f"{loc}.{i}", "Input should be a valid integer", v)
                    for i, v in enumerate(ids)
                    if not isinstance(v, int) or isinstance(v, bool)
                ]
                if errors:
                    raise ValidationFailure(errors)
        return body

    def rendered(self, request: dict[str, Any]) -> dict[str, Any]:
        """A rendered GenerateRequest with the release's keys, in its order (absent: null)."""
        return {key: request.get(key) for key in self.render_keys}

    def derender_input(self, body: Any) -> Any:
        """A derender body with the release's logprob entries read as 0.32's integer ones: a
        legacy entry `{"token": "token_id:N", "logprob", "bytes"}` becomes `{"token_id": N,
        "logprob", "rank": null}`; an entry without `token` is pydantic's 400."""
        if not self.derender_legacy or not isinstance(body, dict):
            return body
        if "output_mode" in self.unknown_fields:  # not a field of its GenerateResponse
            for _, answer in _answers(body):
                if isinstance(answer, dict):
                    answer.pop("output_mode", None)
        errors: list[dict[str, Any]] = []
        for loc, entry in _logprob_entries(body):
            token = entry.get("token")
            digits = token.removeprefix("token_id:") if isinstance(token, str) else ""
            if "token" not in entry:
                errors.append(item("missing", f"{loc}.token", "Field required", entry))
            elif not (
                isinstance(token, str) and token.startswith("token_id:") and digits.isdigit()
            ):
                msg = "Input should be a token_id:N placeholder"
                errors.append(item("value_error", f"{loc}.token", msg, token))
            else:
                kept = {k: v for k, v in entry.items() if k not in ("token", "bytes")}
                entry.clear()
                entry.update({"token_id": int(digits), **kept, "rank": None})
        if errors:
            raise ValidationFailure(errors)
        return body


def _answers(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """The generate answers a derender body carries, with where they are."""
    answers: list[tuple[str, Any]] = []
    for key in ("generate_response", "generate_chunk"):
        answers.append((f"body.{key}", body.get(key)))
    responses = body.get("generate_responses")
    if isinstance(responses, list):
        answers += [(f"body.generate_responses.{i}", r) for i, r in enumerate(responses)]
    return answers


def _logprob_entries(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every logprob entry (top ones included) of the generate answers in a derender body."""
    for where, answer in _answers(body):
        choices = answer.get("choices") if isinstance(answer, dict) else None
        for i, choice in enumerate(choices if isinstance(choices, list) else ()):
            logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
            content = logprobs.get("content") if isinstance(logprobs, dict) else None
            for j, entry in enumerate(content if isinstance(content, list) else ()):
                if not isinstance(entry, dict):
                    continue
                loc = f"{where}.choices.{i}.logprobs.content.{j}"
                top = entry.get("top_logprobs")
                for t, sub in enumerate(top if isinstance(top, list) else ()):
                    if isinstance(sub, dict):
                        yield f"{loc}.top_logprobs.{t}", sub
                yield loc, entry


_V031 = Release(
    "0.31.0",
    logprobs_format="legacy",
    abort_route=False,
    gated=False,
    unknown_fields=("output_mode",),
    derender_legacy=True,
    flat_prompt_logprob_ids=True,
    render_keys=_RENDER_031,
    body_keys=_BODY_031,
    choice_keys=_CHOICE_030,
    chunk_keys=_CHUNK_030,
    rewrites=("release-shape", "release-no-abort-chunk"),
)
RELEASES: dict[str, Release] = {
    "0.30": replace(
        _V031,
        version="0.30.0",
        tokens_only_stop=DETOKENIZE_STOP,
        body_keys=_BODY_030,
        unknown_sampling=("prompt_logprob_token_ids",),
        flat_prompt_logprob_ids=False,
        render_keys=_RENDER_030,
    ),
    "0.31": _V031,
    "0.32": Release("0.32.0"),
    "0.33": Release(
        "0.33.0",
        top_logprobs_cut=False,
        pause_rejects=True,
        render_keys=_RENDER_033,
        render_echo=("return_token_ids",),
        output_modes=("tokens", "text", "derender"),
        choice_nulls=("weight_versions",),
        chunk_nulls=("kv_transfer_params",),
        new_fields=("parse_context",),
        parse_context_keys=_PARSE_CONTEXT_033,
    ),
}
RELEASES["0.34"] = replace(
    RELEASES["0.33"],
    version="0.34.0",
    abort_model=True,
    empty_tools_rejected=False,
    render_max_tokens_stated=True,
    # prompt_logprob_token_ids scored (no V2 runner check), prompt_logprob_start with either
    rules_off=("prompt_logprob_token_ids.v2_runner", "prompt_logprob_start.needs_ids"),
    rules_on=(
        "prompt_logprob_token_ids.rows",
        "prompt_logprob_start.needs_either",
        "prompt_logprob_start.in_prompt",
    ),
    usage_details=_USAGE_DETAILS[1:],  # UsageInfo.prompt_tokens_details: exclude_if None
    derender_stream=True,
    message_keys=tuple(k for k in _MESSAGE_032 if k != "annotations"),
    parse_context_keys=(
        *_PARSE_CONTEXT_033[:4],
        "return_tokens_as_token_ids",
        *_PARSE_CONTEXT_033[4:],
    ),
)
DEFAULT = RELEASES["0.32"]
"""The release the mock answers as unless told (`--mock-vllm-version`), and the base every row
differs from: the spec's release (`openapi/tito.yaml`), not the newest."""
REWRITES = frozenset(name for r in RELEASES.values() for name in r.rewrites)


def release_of(version: str) -> Release:
    """`0.31` or `0.31.0` -> its release; KeyError for any other."""
    short = version[:-2] if version.count(".") == 2 and version.endswith(".0") else version
    return RELEASES[short]
