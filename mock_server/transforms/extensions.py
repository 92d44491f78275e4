"""Defects of the release extensions (`--mock-vllm-version 0.34`): the derender output mode and
`parse_context`, as rewrites of the otherwise correct answer
(`mock_server/answers/derender_mode.py`).

A derender answer is told by its echo (`output_mode: "derender"`): the engine runs it as the
text level, so `ctx.req.output_mode` says "text" for both.
"""

from __future__ import annotations

import re

from mock_server.engine.sequence import TokenRecord
from mock_server.transforms import answer_rewrites
from mock_server.transforms.answer_rewrites import ANSWERS, _entries
from mock_server.transforms.transformers import Context, Json, transformer

EXTRA = "!"  # what derender-content-wrong adds to each parsed message
PLACEHOLDER = re.compile(r"^token_id:(\d+)$")


def _choices(obj: Json, mode: str) -> list[Json]:
    """The answer's choices when it is in output mode `mode`, else none."""
    return answer_rewrites._choices(obj) if obj.get("output_mode") == mode else []


@transformer("derender-content-wrong", *ANSWERS)
def derender_content_wrong(obj: Json, ctx: Context) -> Json:
    """Each parsed message ends with EXTRA; streamed, each choice's last delta does, so the
    deltas still join to the (wrong) whole message."""
    for choice in _choices(obj, "derender"):
        if "message" in choice:
            choice["message"]["content"] += EXTRA
        elif choice.get("finish_reason") is not None:
            choice["delta"]["content"] = choice["delta"].get("content", "") + EXTRA
    return obj


@transformer("derender-stream-no-role", "chunk")
def derender_stream_no_role(chunk: Json, ctx: Context) -> Json:
    for choice in _choices(chunk, "derender"):
        choice["delta"].pop("role", None)
    return chunk


@transformer("parse-context-ignored", *ANSWERS)
def parse_context_ignored(obj: Json, ctx: Context) -> Json:
    """Derender logprob tokens as a server without --return-tokens-as-token-ids decodes them,
    whatever the parse_context says."""
    if ctx.cfg.return_tokens_as_token_ids:
        return obj
    for choice in _choices(obj, "derender"):
        for entry in _entries(choice):
            match = PLACEHOLDER.match(entry["token"])
            if match is not None:
                text = ctx.tokenizer.token_text(int(match.group(1)))
                entry["token"], entry["bytes"] = text, list(text.encode(errors="replace"))
    return obj


def _records(choice: Json, ctx: Context) -> list[TokenRecord]:
    """The records a choice's logprobs render: all of its sequence's in a whole answer, the
    ones after those already streamed in a chunk (counted in `ctx.state`)."""
    seq = ctx.sequences[int(choice["index"])]
    sent: dict[int, int] = ctx.state.setdefault("records_sent", {})
    start = sent.get(seq.index, 0) if ctx.req.stream else 0
    sent[seq.index] = start + len(choice["token_ids"])
    return seq.records[start : sent[seq.index]]


@transformer("parse-context-read-everywhere", *ANSWERS)
def parse_context_read_everywhere(obj: Json, ctx: Context) -> Json:
    """Text mode too reads parse_context.return_tokens_as_token_ids (vLLM: derender only)."""
    context = ctx.req.parse_context or {}
    if context.get("return_tokens_as_token_ids") is not True:
        return obj
    for choice in _choices(obj, "text"):
        content = (choice.get("logprobs") or {}).get("content") or []
        for entry, record in zip(content, _records(choice, ctx), strict=False):
            entry.update(token=f"token_id:{record.token_id}", bytes=None)
            for top, (token_id, _, _) in zip(entry["top_logprobs"], record.top, strict=False):
                top.update(token=f"token_id:{token_id}", bytes=None)
    return obj
