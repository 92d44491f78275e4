"""Render and derender requests of the diff corpus (tokenizer-side endpoints under /v1)."""

from __future__ import annotations

from typing import Any

from conformance.diff.case import DISABLED, SCALE_OUT, SERVED, TOKENS_ONLY, Case

COMPLETIONS_RENDER = "/v1/completions/render"
CHAT_RENDER = "/v1/chat/completions/render"
COMPLETIONS_DERENDER = "/v1/completions/derender"
CHAT_DERENDER = "/v1/chat/completions/derender"
PROMPT = [321, 608, 78]
"""The prompt every derendered answer follows (its ids valid in any vocab)."""
ONE_PROMPT = {"prompt_tokens": len(PROMPT), "prompt_token_ids": PROMPT}
"""How a derender of one answer (chat, or one stream chunk) names its prompt."""


def _choice(tokens: list[int], final: bool, logprobs: bool) -> dict[str, Any]:
    content = [
        {
            "token_id": t,
            "logprob": -1.5,
            "rank": 1,
            "top_logprobs": [{"token_id": t, "logprob": -1.5, "rank": 1}],
        }
        for t in tokens
    ]
    return {
        "index": 0,
        "finish_reason": "length" if final else None,
        "stop_reason": None,
        "token_ids": tokens,
        "weight_versions": [{"version": "default", "start": 0, "end": 3}] if final else None,
        "logprobs": {"content": content} if logprobs else None,
    }


def generate_response(output_mode: str = "tokens", logprobs: bool = True) -> dict[str, Any]:
    """A generate answer as a client would pass it to derender (ids valid in any vocab)."""
    return {
        "request_id": "generate-tokens-cmpl-diff",
        "model": "tiny-qwen3",
        "created": 1796215131,
        "usage": {
            "prompt_tokens": 3,
            "total_tokens": 6,
            "completion_tokens": 3,
            "prompt_tokens_details": None,
            "completion_tokens_details": None,
        },
        "prompt_logprobs": None,
        "prompt_token_ids": None,
        "kv_transfer_params": None,
        "output_mode": output_mode,
        "choices": [_choice([321, 608, 78], True, logprobs)],
    }


def _chunk(final: bool) -> dict[str, Any]:
    return {
        "request_id": "generate-tokens-cmpl-diff",
        "usage": None,
        "output_mode": "tokens",
        "choices": [_choice([338] if not final else [10], final, True)],
    }


RENDER_CASES: tuple[Case, ...] = (
    Case(
        "render-completions-text",
        SCALE_OUT,
        path=COMPLETIONS_RENDER,
        body={"prompt": "def hello(world):", "max_tokens": 4, "temperature": 0, "logprobs": 1},
        covers="render",
    ),
    Case(
        "render-completions-token-prompt",
        SERVED,
        path=COMPLETIONS_RENDER,
        body={"prompt": [321, 608, 78], "max_tokens": 3, "n": 2},
        covers="render",
    ),
    Case(
        "render-chat",
        SCALE_OUT,
        path=CHAT_RENDER,
        body={"messages": [{"role": "user", "content": "hi there"}], "max_tokens": 4, "seed": 3},
        covers="render",
    ),
    Case(
        "render-chat-tokens-only",
        TOKENS_ONLY,
        path=CHAT_RENDER,
        body={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
        covers="render (400 without tokenizer)",
    ),
    Case(
        "render-completions-text-tokens-only",
        TOKENS_ONLY,
        path=COMPLETIONS_RENDER,
        body={"prompt": "hello", "max_tokens": 2},
        covers="render (400 without tokenizer)",
    ),
    Case(
        "derender-completions",
        SCALE_OUT,
        path=COMPLETIONS_DERENDER,
        body={
            "generate_responses": [generate_response()],
            "prompt_tokens": [3],
            "prompt_token_ids": [[321, 608, 78]],
        },
        covers="derender",
    ),
    Case(
        "derender-chat",
        SCALE_OUT,
        path=CHAT_DERENDER,
        body={
            "generate_response": generate_response(logprobs=False),
            **ONE_PROMPT,
        },
        covers="derender",
    ),
    Case(
        "derender-text-rejected",
        SCALE_OUT,
        path=COMPLETIONS_DERENDER,
        body={"generate_responses": [generate_response("text", logprobs=False)]},
        covers="derender (400)",
    ),
    Case(
        "derender-stream-first-chunk",
        SCALE_OUT,
        path=COMPLETIONS_DERENDER,
        body={
            "stream": True,
            "generate_chunk": _chunk(False),
            "stream_state": None,
            **ONE_PROMPT,
        },
        covers="derender stream",
    ),
    Case(
        "derender-minimal",
        SCALE_OUT,
        path=COMPLETIONS_DERENDER,
        body={"generate_responses": [{"choices": [{"index": 0, "token_ids": [321]}]}]},
        covers="derender (minimal input: vLLM's defaults for id, finish_reason, usage)",
    ),
    Case(
        "derender-length-mismatch",
        SCALE_OUT,
        path=COMPLETIONS_DERENDER,
        body={
            "generate_responses": [generate_response(), generate_response()],
            "prompt_tokens": [3],
        },
        covers="derender (400: prompt_tokens length must equal generate_responses length)",
    ),
    Case(
        "derender-chat-request-empty",
        SCALE_OUT,
        path=CHAT_DERENDER,
        body={"generate_response": generate_response(logprobs=False), "chat_request": {}},
        covers="derender (400: chat_request needs messages)",
    ),
    Case(
        "derender-tokens-only",
        TOKENS_ONLY,
        path=COMPLETIONS_DERENDER,
        body={"generate_responses": [generate_response()]},
        covers="derender (400 without tokenizer)",
    ),
    Case(
        "disabled-render",
        DISABLED,
        path=CHAT_RENDER,
        body={"messages": [{"role": "user", "content": "hi"}]},
        covers="gating (403)",
    ),
    Case(
        "disabled-derender",
        DISABLED,
        path=COMPLETIONS_DERENDER,
        body={"generate_responses": [generate_response()]},
        covers="gating (403)",
    ),
)
