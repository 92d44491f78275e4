"""Defects that rewrite generate's answer, streamed or not: ids, choices, logprobs, spans."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mock_server.transforms.transformers import Context, Json, key_dropper, transformer

PREFIX = "generate-tokens-"
ANSWERS = ("body", "chunk")  # choices are rewritten alike in the body and in each chunk
ALL = ("body", "chunk", "usage")


def _choices(obj: Json) -> list[Json]:
    choices: list[Json] = obj.get("choices", [])
    return choices


def _entries(choice: Json) -> Iterator[Json]:
    """Every logprob entry of a choice, the top_logprobs' included."""
    logprobs = choice.get("logprobs")
    for entry in logprobs["content"] if logprobs else ():
        yield entry
        yield from entry.get("top_logprobs", ())


def _put_before_logprobs(choice: Json, key: str, value: Any) -> None:
    """vLLM's key order: optional fields sit just before `logprobs`, the last key."""
    logprobs = choice.pop("logprobs")
    choice[key] = value
    choice["logprobs"] = logprobs


# -- the whole answer ------------------------------------------------------------------
@transformer("request-id-no-prefix", *ALL)
def request_id_no_prefix(obj: Json, ctx: Context) -> Json:
    obj["request_id"] = obj["request_id"].removeprefix(PREFIX)
    return obj


@transformer("output-mode-wrong-echo", *ALL)
def output_mode_wrong_echo(obj: Json, ctx: Context) -> Json:
    if "output_mode" in obj:
        obj["output_mode"] = "tokens"
    return obj


@transformer("output-mode-not-echoed", *ALL)
def output_mode_not_echoed(obj: Json, ctx: Context) -> Json:
    """No echo, and the text a text-mode request asked for is left out."""
    obj.pop("output_mode", None)
    for choice in _choices(obj):
        choice.pop("text", None)
    return obj


@transformer("prompt-token-ids-missing", "body")
def prompt_token_ids_missing(body: Json, ctx: Context) -> Json:
    body["prompt_token_ids"] = None
    return body


prompt_token_ids_missing_chunk = key_dropper(
    "prompt-token-ids-missing", "prompt_token_ids", "chunk"
)


@transformer("usage-miscount", "body")
def usage_miscount(body: Json, ctx: Context) -> Json:
    body["usage"]["completion_tokens"] += 1
    body["usage"]["total_tokens"] += 1
    return body


@transformer("choices-out-of-order", "body")
def choices_out_of_order(body: Json, ctx: Context) -> Json:
    """Every choice intact, listed last index first."""
    body["choices"] = body["choices"][::-1]
    return body


@transformer("finish-reason-null", "body")
def finish_reason_null(body: Json, ctx: Context) -> Json:
    """Without a finish reason there is no stop reason, and no routed experts either."""
    for choice in _choices(body):
        choice["finish_reason"] = choice["stop_reason"] = choice["routed_experts"] = None
    return body


@transformer("abort-no-partial-output", "body")
def abort_no_partial_output(body: Json, ctx: Context) -> Json:
    """An aborted choice comes back as if no token had been generated (text aside)."""
    for choice in _choices(body):
        if choice["finish_reason"] != "abort":
            continue
        dropped = len(choice["token_ids"])
        choice["token_ids"] = []
        if choice["sampling_mask"] is not None:
            choice["sampling_mask"] = []
        if choice["weight_versions"] is not None:
            choice["weight_versions"] = []
        if choice["logprobs"] is not None:
            choice["logprobs"]["content"] = []
        body["usage"]["completion_tokens"] -= dropped
        body["usage"]["total_tokens"] -= dropped
    return body


# -- each choice -----------------------------------------------------------------------
@transformer("abort-finish-reason-length", *ANSWERS)
def abort_finish_reason_length(obj: Json, ctx: Context) -> Json:
    for choice in _choices(obj):
        if choice["finish_reason"] == "abort":
            choice["finish_reason"] = "length"
    return obj


@transformer("routed-experts-always", *ANSWERS)
def routed_experts_always(obj: Json, ctx: Context) -> Json:
    for choice in _choices(obj):
        if choice["routed_experts"] is None:
            choice["routed_experts"] = "AAAA"
    return obj


@transformer("schema-index-string", *ANSWERS)
def schema_index_string(obj: Json, ctx: Context) -> Json:
    for choice in _choices(obj):
        choice["index"] = str(choice["index"])
    return obj


@transformer("token-ids-as-strings", *ANSWERS)
def token_ids_as_strings(obj: Json, ctx: Context) -> Json:
    for choice in _choices(obj):
        choice["token_ids"] = [str(t) for t in choice["token_ids"]]
    return obj


@transformer("token-ids-shifted", "body")
def token_ids_shifted(body: Json, ctx: Context) -> Json:
    """The non-streamed answer names the next id of each token it generated (its logprob
    entries and its stream still name the right ones)."""
    for choice in _choices(body):
        choice["token_ids"] = [t + 1 for t in choice["token_ids"]]
    return body


@transformer("text-missing", *ANSWERS)
def text_missing(obj: Json, ctx: Context) -> Json:
    for choice in _choices(obj):
        choice.pop("text", None)
    return obj


@transformer("tokens-mode-text", *ANSWERS)
def tokens_mode_text(obj: Json, ctx: Context) -> Json:
    if not ctx.text:
        for choice in _choices(obj):
            _put_before_logprobs(choice, "text", ctx.tokenizer.decode(choice["token_ids"]))
    return obj


# -- weight_versions -------------------------------------------------------------------
def _spans(obj: Json) -> Iterator[tuple[Json, list[Json]]]:
    for choice in _choices(obj):
        if choice["weight_versions"] is not None:
            yield choice, choice["weight_versions"]


@transformer("weight-versions-missing", *ANSWERS)
def weight_versions_missing(obj: Json, ctx: Context) -> Json:
    for choice in _choices(obj):
        choice["weight_versions"] = None
    return obj


@transformer("weight-update-no-split", *ANSWERS)
def weight_update_no_split(obj: Json, ctx: Context) -> Json:
    """Every token labelled with the last label: one span."""
    for choice, spans in _spans(obj):
        if spans:
            last = spans[-1]
            choice["weight_versions"] = [
                {"version": last["version"], "start": 0, "end": last["end"]}
            ]
    return obj


@transformer("weight-versions-empty-nonempty", *ANSWERS)
def weight_versions_empty_nonempty(obj: Json, ctx: Context) -> Json:
    for choice, spans in _spans(obj):
        if not spans:
            choice["weight_versions"] = [{"version": "default", "start": 0, "end": 0}]
    return obj


@transformer("weight-versions-gap", *ANSWERS)
def weight_versions_gap(obj: Json, ctx: Context) -> Json:
    for _, spans in _spans(obj):
        if spans:
            spans[-1]["end"] -= 1
    return obj


# -- logprobs --------------------------------------------------------------------------
@transformer("logprobs-count-mismatch", *ANSWERS)
def logprobs_count_mismatch(obj: Json, ctx: Context) -> Json:
    for choice in _choices(obj):
        if choice["logprobs"] and choice["logprobs"]["content"]:
            choice["logprobs"]["content"] = choice["logprobs"]["content"][:-1]
    return obj


@transformer("logprobs-null", *ANSWERS)
def logprobs_null(obj: Json, ctx: Context) -> Json:
    """Asked for, and not there: `logprobs: null` on every choice that carries tokens."""
    for choice in _choices(obj):
        if choice.get("logprobs") is not None:
            choice["logprobs"] = None
    return obj


@transformer("logprobs-positive", *ANSWERS)
def logprobs_positive(obj: Json, ctx: Context) -> Json:
    for choice in _choices(obj):
        for entry in _entries(choice):
            entry["logprob"] = abs(entry["logprob"])
    return obj


@transformer("rank-wrong", *ANSWERS)
def rank_wrong(obj: Json, ctx: Context) -> Json:
    for choice in _choices(obj):
        for entry in _entries(choice):
            if "rank" in entry:
                entry["rank"] = 1
    return obj


@transformer("prompt-logprobs-ranks-shifted", "body")
def prompt_logprobs_ranks_shifted(body: Json, ctx: Context) -> Json:
    """Every rank of the prompt_logprobs one too high (the output's are right)."""
    for position in body.get("prompt_logprobs") or []:
        for entry in (position or {}).values():
            entry["rank"] += 1
    return body


def _by_rank(entry: Json) -> float:
    """Only integer-keyed entries carry `rank`; elsewhere the logprob falls as the rank rises."""
    return float(entry["rank"]) if "rank" in entry else -float(entry["logprob"])


@transformer("top-logprobs-sampled-not-first", *ANSWERS)
def top_logprobs_sampled_not_first(obj: Json, ctx: Context) -> Json:
    """top_logprobs sorted by rank: the sampled token wherever its rank puts it."""
    for choice in _choices(obj):
        for entry in choice["logprobs"]["content"] if choice["logprobs"] else ():
            entry["top_logprobs"].sort(key=_by_rank)
    return obj


@transformer("text-no-bytes", *ANSWERS)
def text_no_bytes(obj: Json, ctx: Context) -> Json:
    if ctx.logprobs_shape != "tokens":
        for choice in _choices(obj):
            for entry in _entries(choice):
                entry.pop("bytes", None)
    return obj


@transformer("tokens-logprobs-with-token", *ANSWERS)
def tokens_logprobs_with_token(obj: Json, ctx: Context) -> Json:
    """Integer-keyed entries that also carry the legacy `token` and `bytes` fields."""
    if ctx.logprobs_shape != "tokens":
        return obj
    for choice in _choices(obj):
        for entry in _entries(choice):
            top = entry.pop("top_logprobs", None)
            entry |= {"token": f"token_id:{entry['token_id']}", "bytes": None}
            if top is not None:
                entry["top_logprobs"] = top
    return obj


@transformer("placeholder-wrong-id", *ANSWERS)
def placeholder_wrong_id(obj: Json, ctx: Context) -> Json:
    if ctx.logprobs_shape == "text" and ctx.cfg.return_tokens_as_token_ids:
        for choice in _choices(obj):
            for entry in _entries(choice):
                shown = int(entry["token"].removeprefix("token_id:")) + 1
                entry["token"] = f"token_id:{shown}"
    return obj
