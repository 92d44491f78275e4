"""Defects that break a rule in one kind of answer only: text mode, or a stream.

A server can keep a rule where a requirement's own check looks (a tokens-mode body) and break
it elsewhere. These are the defects the suite's every-answer checks
(`conformance/checks/test_every_answer.py`) exist for: each leaves tokens-mode bodies alone.
"""

from __future__ import annotations

from collections.abc import Iterator

from mock_server.transforms.answer_rewrites import _choices, _entries
from mock_server.transforms.transformers import Context, Json, transformer


def _items(obj: Json) -> Iterator[Json]:
    """Every logprob item of every choice: the entries and their top_logprobs."""
    for choice in _choices(obj):
        yield from _entries(choice)


def _content(choice: Json) -> list[Json]:
    logprobs = choice.get("logprobs")
    return logprobs["content"] if isinstance(logprobs, dict) and logprobs.get("content") else []


def _text_choices(obj: Json, ctx: Context) -> list[Json]:
    """The choices of a text-mode answer or chunk (none elsewhere)."""
    return _choices(obj) if ctx.text else []


def _text_tops(obj: Json, ctx: Context) -> Iterator[list[Json]]:
    """Each top_logprobs list of a text-mode answer or chunk (none elsewhere)."""
    for choice in _text_choices(obj, ctx):
        for entry in _content(choice):
            top = entry.get("top_logprobs")
            if isinstance(top, list):
                yield top


@transformer("stream-ranks-shifted", "chunk")
def stream_ranks_shifted(chunk: Json, ctx: Context) -> Json:
    """Every rank of a tokens-mode stream's logprobs one too high."""
    if ctx.logprobs_shape == "tokens":
        for item in _items(chunk):
            if isinstance(item.get("rank"), int):
                item["rank"] += 1
    return chunk


@transformer("text-logprobs-short", "body")
def text_logprobs_short(body: Json, ctx: Context) -> Json:
    """A text-mode answer's logprobs miss their last entry."""
    for choice in _text_choices(body, ctx):
        content = _content(choice)
        if content:
            content.pop()
    return body


@transformer("text-sampled-not-first", "body")
def text_sampled_not_first(body: Json, ctx: Context) -> Json:
    """A text-mode answer lists the sampled token second among its top_logprobs."""
    for top in _text_tops(body, ctx):
        if len(top) > 1:
            top[0], top[1] = top[1], top[0]
    return body


@transformer("text-logprobs-positive", "body")
def text_logprobs_positive(body: Json, ctx: Context) -> Json:
    """Every logprob of a text-mode answer is 0.5 (a probability above 1)."""
    if ctx.text:
        for item in _items(body):
            item["logprob"] = 0.5
    return body


@transformer("text-stream-bytes-wrong", "chunk")
def text_stream_bytes_wrong(chunk: Json, ctx: Context) -> Json:
    """A text-mode stream's logprob bytes carry one byte too many."""
    if ctx.text:
        for item in _items(chunk):
            if isinstance(item.get("bytes"), list):
                item["bytes"] = [*item["bytes"], 32]
    return chunk


def _spans_short(obj: Json, ctx: Context) -> Json:
    """A text-mode answer's (or stream's final) weight_versions end one token early."""
    for choice in _text_choices(obj, ctx):
        spans = choice.get("weight_versions")
        if isinstance(spans, list) and spans and spans[-1]["end"] > spans[-1]["start"] + 1:
            spans[-1] = {**spans[-1], "end": spans[-1]["end"] - 1}
    return obj


transformer("text-spans-short", "body")(_spans_short)
transformer("text-stream-spans-short", "chunk")(_spans_short)


@transformer("choices-short-with-logprobs", "body")
def choices_short_with_logprobs(body: Json, ctx: Context) -> Json:
    """With n > 1 and logprobs asked, the last choice is missing."""
    choices = _choices(body)
    if ctx.req.sampling.logprobs is not None and len(choices) > 1:
        choices.pop()
    return body


@transformer("text-request-id-other", "body")
def text_request_id_other(body: Json, ctx: Context) -> Json:
    """A text-mode answer names another request id than the one it was sent."""
    if ctx.text and isinstance(body.get("request_id"), str):
        body["request_id"] += "-text"
    return body


@transformer("usage-chunk-other-id", "usage")
def usage_chunk_other_id(chunk: Json, ctx: Context) -> Json:
    """A stream's usage chunk names another request than its other chunks."""
    if isinstance(chunk.get("request_id"), str):
        chunk["request_id"] += "-usage"
    return chunk


@transformer("text-stream-top-logprobs-short", "chunk")
def text_stream_top_logprobs_short(chunk: Json, ctx: Context) -> Json:
    """A text-mode stream lists one alternative too few in each top_logprobs."""
    for top in _text_tops(chunk, ctx):
        if top:
            top.pop()
    return chunk


@transformer("usage-chunk-other-mode", "usage")
def usage_chunk_other_mode(chunk: Json, ctx: Context) -> Json:
    """A stream's usage chunk echoes the other output_mode than the one asked for."""
    chunk["output_mode"] = "text" if chunk.get("output_mode") == "tokens" else "tokens"
    return chunk


@transformer("text-label-other", "body")
def text_label_other(body: Json, ctx: Context) -> Json:
    """A text-mode answer's spans carry a label the server was never given."""
    for choice in _text_choices(body, ctx):
        for span in choice.get("weight_versions") or []:
            span["version"] = f"{span['version']}-x"
    return body


@transformer("text-stream-ids-shifted", "chunk")
def text_stream_ids_shifted(chunk: Json, ctx: Context) -> Json:
    """A text-mode stream's token ids are each one too high (its text is right)."""
    for choice in _text_choices(chunk, ctx):
        choice["token_ids"] = [i + 1 for i in choice.get("token_ids") or []]
    return chunk


@transformer("text-stream-stop-reason-other", "chunk")
def text_stream_stop_reason_other(chunk: Json, ctx: Context) -> Json:
    """A text-mode stream that a stop string ended says another string as its stop_reason."""
    for choice in _text_choices(chunk, ctx):
        if isinstance(choice.get("stop_reason"), str):
            choice["stop_reason"] += "-x"
    return chunk
