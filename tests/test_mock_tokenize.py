"""/tokenize, /detokenize and the messages/responses render routes (issue 11, part 2): served
with vLLM 0.32's shapes and errors, and consistent with render, generate and derender."""

from __future__ import annotations

from typing import Any

import pytest
from captures import TINY_ARGV, capture

from mock_server.harness.testing import asgi_client

pytestmark = pytest.mark.anyio
ARGV = TINY_ARGV


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def replay(name: str, argv: list[str] = ARGV) -> tuple[Any, Any]:
    cap = capture(name)
    req = cap["request"]
    async with asgi_client(argv) as c:
        if req["body"] is None:
            raw = req["raw_body"].encode()
            headers = {"Content-Type": "application/json"}
            r = await c.request(req["method"], req["path"], content=raw, headers=headers)
        else:
            r = await c.request(req["method"], req["path"], json=req["body"])
    assert r.status_code == cap["response"]["status"], r.text
    return cap["response"]["body"], r.json()


def same_shape(want: Any, got: Any, free: bool = False) -> None:
    """Same keys in the same order, same JSON types and nulls (token values aside); `free`:
    a dict keyed by token text (completions' top_logprobs), whose keys are values."""
    if isinstance(want, dict) and free:
        assert isinstance(got, dict)
        for a, b in zip(want.values(), got.values(), strict=False):
            same_shape(a, b)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), (list(got), list(want))
        for key in want:
            same_shape(want[key], got[key], key == "top_logprobs")
    elif isinstance(want, list):
        assert isinstance(got, list)
        for a, b in zip(want, got, strict=False):
            same_shape(a, b, free)
    else:
        assert type(got) is type(want) or {type(got), type(want)} <= {int, float}, (want, got)


@pytest.mark.parametrize(
    "name",
    [
        "tokenize",
        "detokenize",
        "tokenize_special",
        "tokenize_chat",
        "tokenize_chat_no_gen_prompt",
        "detokenize_oov",
        "detokenize_empty",
        "detokenize_specials",
        "render_messages",
        "render_messages_system_stream",
        "render_responses",
        "render_responses_messages",
        "render_responses_stream",
    ],
)
async def test_answer_has_vllms_shape(name: str) -> None:
    want, got = await replay(name)
    same_shape(want, got)


@pytest.mark.parametrize(
    "name",
    [
        "tokonly_tokenize",
        "tokenize_missing",
        "tokenize_model_wrong",
        "tokenize_prompt_int",
        "detokenize_negative",
        "detokenize_missing",
        "detokenize_invalid_json",
        "detokenize_nan",
    ],
)
async def test_errors_are_vllms(name: str) -> None:
    argv = ["--tokens-only", *ARGV[1:]] if name.startswith("tokonly") else ARGV
    want, got = await replay(name, argv)
    assert got == want


async def test_detokenize_keeps_specials_and_skips_unknown_ids() -> None:
    async with asgi_client(ARGV) as c:
        hi = (await c.post("/tokenize", json={"prompt": "hi"})).json()["tokens"]
        r = await c.post("/detokenize", json={"tokens": [2046, *hi, 2047, 99999]})
    assert r.json() == {"prompt": "<|im_start|>hi<|im_end|>"}


async def test_token_strs_spell_bytes_as_the_vocabulary_does() -> None:
    async with asgi_client(ARGV) as c:
        r = await c.post("/tokenize", json={"prompt": "a\n b", "return_token_strs": True})
    body = r.json()
    assert "".join(body["token_strs"]) == "aĊĠb"
    assert body["count"] == len(body["tokens"]) == len(body["token_strs"])


async def test_tokenize_is_what_render_and_derender_use() -> None:
    """The SkyRL loop: render -> generate -> /detokenize gives derender's text."""
    messages = [{"role": "user", "content": "hello there"}]
    async with asgi_client(["--enable-scale-out"]) as c:
        tokens = (await c.post("/tokenize", json={"messages": messages})).json()["tokens"]
        rendered = (await c.post("/v1/chat/completions/render", json={"messages": messages})).json()
        assert rendered["token_ids"] == tokens
        rendered["sampling_params"].update(max_tokens=12, seed=3)
        gen = (await c.post("/inference/v1/generate", json=rendered)).json()
        ids = gen["choices"][0]["token_ids"]
        text = (await c.post("/detokenize", json={"tokens": ids})).json()["prompt"]
        derendered = await c.post(
            "/v1/chat/completions/derender",
            json={"generate_response": gen, "prompt_tokens": len(tokens)},
        )
    plain = text.replace("<|im_end|>", "").replace("<|endoftext|>", "")
    assert derendered.json()["choices"][0]["message"]["content"] == plain


@pytest.mark.parametrize("argv", [["--tokens-only"], []])
async def test_served_in_every_profile_without_a_key(argv: list[str]) -> None:
    async with asgi_client([*argv, "--api-key", "k"]) as c:
        r = await c.post("/detokenize", json={"tokens": [104, 105]})
    assert r.status_code == (400 if argv else 200)


async def test_messages_and_responses_render_generate_like_chat() -> None:
    """One conversation, three request APIs, one prompt."""
    async with asgi_client(["--enable-scale-out"]) as c:
        chat = await c.post(
            "/v1/chat/completions/render",
            json={
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                ]
            },
        )
        msgs = await c.post(
            "/v1/messages/render",
            json={
                "model": "mock-model",
                "max_tokens": 4,
                "system": "be brief",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            },
        )
        resp = await c.post(
            "/v1/responses/render",
            json={"instructions": "be brief", "input": [{"role": "user", "content": "hi"}]},
        )
        for r in (msgs, resp):
            assert r.status_code == 200, r.text
            assert r.json()["token_ids"] == chat.json()["token_ids"]
            gen = await c.post("/inference/v1/generate", json=r.json())
            assert gen.status_code == 200, gen.text
