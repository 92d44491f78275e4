"""Defects that only a stream has: chunk contents over time, the usage chunk, SSE framing.

A chunk transformer may keep what it needs between the chunks of one stream in `ctx.state`
and read the sequences the engine is filling (`ctx.sequences`): they are at the state the
chunk was built from.
"""

from __future__ import annotations

import json
from typing import Any

from mock_server.engine.fields import routed_experts, weight_spans
from mock_server.engine.sequence import Sequence
from mock_server.transforms.transformers import Context, Json, key_dropper, transformer


def _pairs(chunk: Json, ctx: Context) -> list[tuple[Json, Sequence]]:
    """Each choice of the chunk with the sequence it comes from."""
    return [(choice, ctx.sequences[int(choice["index"])]) for choice in chunk["choices"]]


stream_chunk_no_output_mode = key_dropper("stream-chunk-no-output-mode", "output_mode", "chunk")


@transformer("stream-cumulative-deltas", "chunk")
def stream_cumulative_deltas(chunk: Json, ctx: Context) -> Json:
    """Each chunk repeats every token so far (text stays a delta)."""
    sent: dict[int, dict[str, list[Any]]] = ctx.state.setdefault("cumulative", {})
    for choice, seq in _pairs(chunk, ctx):
        acc = sent.setdefault(seq.index, {"token_ids": [], "content": [], "mask": []})
        acc["token_ids"] += choice["token_ids"]
        choice["token_ids"] = list(acc["token_ids"])
        if choice["sampling_mask"] is not None:
            acc["mask"] += choice["sampling_mask"]
            choice["sampling_mask"] = list(acc["mask"])
        if choice["logprobs"] is not None:
            acc["content"] += choice["logprobs"]["content"]
            choice["logprobs"]["content"] = list(acc["content"])
    return chunk


@transformer("stream-finish-reason-early", "chunk")
def stream_finish_reason_early(chunk: Json, ctx: Context) -> Json:
    """The first unfinished choice of the stream already says `length` (once per stream)."""
    for choice, seq in _pairs(chunk, ctx):
        if choice["finish_reason"] is None and not ctx.state.get("early_done"):
            ctx.state["early_done"] = True
            choice["finish_reason"] = "length"
            if ctx.cfg.enable_return_routed_experts:
                choice["routed_experts"] = routed_experts(ctx.req.token_ids, seq.records)
    return chunk


@transformer("stream-no-final-weight-versions", "chunk")
def stream_no_final_weight_versions(chunk: Json, ctx: Context) -> Json:
    for choice in chunk["choices"]:
        choice["weight_versions"] = None
    return chunk


@transformer("stream-weight-versions-every-chunk", "chunk")
def stream_weight_versions_every_chunk(chunk: Json, ctx: Context) -> Json:
    """Every chunk carries the spans of all tokens so far."""
    for choice, seq in _pairs(chunk, ctx):
        choice["weight_versions"] = weight_spans(seq.records)
    return chunk


@transformer("stream-weight-versions-short", "chunk")
def stream_weight_versions_short(chunk: Json, ctx: Context) -> Json:
    """The final spans leave out the last token."""
    for choice, seq in _pairs(chunk, ctx):
        if choice["finish_reason"] is not None and choice["weight_versions"] is not None:
            choice["weight_versions"] = weight_spans(seq.records[:-1])
    return chunk


@transformer("stream-held-text-lost", "chunk")
def stream_held_text_lost(chunk: Json, ctx: Context) -> Json:
    """With stop strings, the last held-back character is never flushed."""
    if not (ctx.text and ctx.req.sampling.stop):
        return chunk
    sent: dict[int, int] = ctx.state.setdefault("lossy_sent", {})
    for choice, seq in _pairs(chunk, ctx):
        if "text" in choice:
            shown = seq.detok.emitted[:-1] if seq.detok is not None else ""
            start = sent.get(seq.index, 0)
            sent[seq.index] = max(start, len(shown))
            choice["text"] = shown[start:]
    return chunk


@transformer("stream-text-cumulative", "chunk")
def stream_text_cumulative(chunk: Json, ctx: Context) -> Json:
    for choice, seq in _pairs(chunk, ctx):
        if "text" in choice and seq.detok is not None:
            choice["text"] = seq.detok.emitted
    return chunk


@transformer("stream-no-usage-chunk", "usage")
def stream_no_usage_chunk(chunk: Json, ctx: Context) -> None:
    return None


@transformer("stream-bad-framing", "frame")
def stream_bad_framing(data: str, framed: bytes) -> bytes:
    """Events end with one newline, not the blank line SSE needs."""
    return framed[:-1] if framed.endswith(b"\n\n") else framed


@transformer("stream-no-done", "frame")
def stream_no_done(data: str, framed: bytes) -> bytes:
    return b"" if data == "[DONE]" else framed


@transformer("stream-error-code-500", "frame")
def stream_error_code_500(data: str, framed: bytes) -> bytes:
    """An engine-side rejection's error event says code 500 (the unstreamed answer is 400)."""
    if not data.startswith('{"error"'):
        return framed
    body = json.loads(data)
    body["error"]["code"] = 500
    return f"data: {json.dumps(body)}\n\n".encode()
