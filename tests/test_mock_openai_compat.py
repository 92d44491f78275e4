"""/v1/completions and /v1/chat/completions (issue 11, part 2): vLLM 0.32's shapes, and the
same tokens as render -> generate for the same templated prompt and seed (vLLM's
`test_same_response_as_chat_completions`, which real vLLM 0.32 passes:
`tests/fixtures/vllm-0.32-issue11/{chat_for_same,generate_from_render_for_same}.json`)."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from captures import capture
from test_mock_tokenize import same_shape

from mock_server.harness.testing import asgi_client, running_server

pytestmark = pytest.mark.anyio
COMMON = ["--max-model-len", "512", "--max-num-seqs", "4", "--mock-vocab-size", "2048"]
COMMON += ["--served-model-name", "tiny-qwen3"]
PROFILES = {
    "scale-out": ["--enable-scale-out", *COMMON],
    "no-flag": COMMON,
    "tokens-only": ["--tokens-only", *COMMON],
}
GEN = "/inference/v1/generate"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def events(text: str) -> list[Any]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


@pytest.mark.parametrize(
    "name",
    [
        "noflag_completions_ok",
        "tokonly_completions",
        "completions_seeded",
        "completions_token_prompt_n2",
        "chat_seeded",
        "chat_return_token_ids",
        "chat_for_same",
    ],
)
async def test_answer_has_vllms_shape(name: str) -> None:
    cap = capture(name)
    argv = PROFILES[cap["server"]]
    async with asgi_client(argv) as c:
        r = await c.post(cap["request"]["path"], json=cap["request"]["body"])
    assert r.status_code == cap["response"]["status"] == 200, r.text
    want, got = cap["response"]["body"], r.json()
    same_shape(want, got)
    assert len(got["choices"]) == len(want["choices"])
    # Where a choice stops is the model's: the toy model meets EOS elsewhere than vLLM's tiny
    # one. A choice that ran to max_tokens on both servers has vLLM's length; none is longer
    # than a choice vLLM ran to max_tokens; the choices' tokens add up to the usage.
    pairs = list(zip(want["choices"], got["choices"], strict=True))
    both_length = [a["finish_reason"] == b["finish_reason"] == "length" for a, b in pairs]
    for (a, b), same in zip(pairs, both_length, strict=True):
        if a.get("token_ids") is not None:
            assert len(a["token_ids"]) == len(b["token_ids"]) or not same
            assert len(b["token_ids"]) <= len(a["token_ids"]) or a["finish_reason"] != "length"
    assert {k: v for k, v in got["usage"].items() if k != "total_tokens"}.keys() == want[
        "usage"
    ].keys() - {"total_tokens"}
    if all(both_length):
        assert got["usage"]["completion_tokens"] == want["usage"]["completion_tokens"]
    if all(c.get("token_ids") is not None for c in got["choices"]):
        lengths = sum(len(c["token_ids"]) for c in got["choices"])
        assert got["usage"]["completion_tokens"] == lengths


@pytest.mark.parametrize("name", ["chat_stream", "completions_stream"])
async def test_stream_events_have_vllms_shape(name: str) -> None:
    cap = capture(name)
    async with asgi_client(PROFILES["scale-out"]) as c:
        r = await c.post(cap["request"]["path"], json=cap["request"]["body"])
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.text.endswith("data: [DONE]\n\n")
    want = [e for e in cap["response"]["events"] if isinstance(e, dict)]
    got = events(r.text)
    # one chunk per token, but chat skips a delta that completes no character yet
    assert len(got) == len(want) or ("chat" in name and len(got) < len(want))
    same_shape(want[0], got[0])
    same_shape(want[-1], got[-1])
    for middle in got[1:-1]:
        same_shape(want[-2 if middle["choices"][0]["finish_reason"] else 1], middle)


@pytest.mark.parametrize(
    "name", ["completions_missing_prompt", "chat_missing_messages", "completions_over_context"]
)
async def test_errors_are_vllms(name: str) -> None:
    cap = capture(name)
    async with asgi_client(PROFILES["scale-out"]) as c:
        r = await c.post(cap["request"]["path"], json=cap["request"]["body"])
    assert r.status_code == cap["response"]["status"]
    assert r.json() == cap["response"]["body"]


@pytest.mark.parametrize(
    "sampling",
    [
        {"temperature": 0, "ignore_eos": True},  # vLLM's test: greedy, ignore_eos both ways
        {"temperature": 1, "seed": 11},
        {"temperature": 0.7, "top_k": 20, "seed": 5, "n": 2},
    ],
)
async def test_same_response_as_chat_completions(sampling: dict[str, Any]) -> None:
    request = {"messages": HI, "max_tokens": 12, **sampling}
    async with asgi_client(["--enable-scale-out"]) as c:
        chat = await c.post("/v1/chat/completions", json={**request, "return_token_ids": True})
        rendered = (await c.post("/v1/chat/completions/render", json=request)).json()
        gen = (await c.post(GEN, json=rendered)).json()
        derendered = await c.post(
            "/v1/chat/completions/derender",
            json={"generate_response": gen, "prompt_tokens": len(rendered["token_ids"])},
        )
    assert chat.status_code == 200, chat.text
    body = chat.json()
    assert body["prompt_token_ids"] == rendered["token_ids"]
    for ours, theirs, text in zip(
        body["choices"], gen["choices"], derendered.json()["choices"], strict=True
    ):
        assert ours["token_ids"] == theirs["token_ids"]
        assert ours["finish_reason"] == theirs["finish_reason"]
        assert ours["message"]["content"] == text["message"]["content"]
    assert body["usage"] == derendered.json()["usage"]


@pytest.mark.parametrize("prompt", ["def hello(", [321, 608], [[5, 6], [7, 8, 9]]])
async def test_same_response_as_completions(prompt: Any) -> None:
    request = {"prompt": prompt, "max_tokens": 6, "seed": 3, "n": 2, "return_token_ids": True}
    async with asgi_client(["--enable-scale-out"]) as c:
        body = (await c.post("/v1/completions", json=request)).json()
        rendered = (await c.post("/v1/completions/render", json=request)).json()
        ids = []
        for one in rendered:
            ids += [ch["token_ids"] for ch in (await c.post(GEN, json=one)).json()["choices"]]
    assert [ch["token_ids"] for ch in body["choices"]] == ids
    assert [ch["index"] for ch in body["choices"]] == list(range(len(ids)))


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
async def test_streamed_tokens_and_text_equal_the_full_answer(path: str) -> None:
    request: dict[str, Any] = {"max_tokens": 16, "seed": 9, "return_token_ids": True}
    request |= {"messages": HI} if "chat" in path else {"prompt": "def hello("}
    async with asgi_client(["--enable-scale-out"]) as c:
        full = (await c.post(path, json=request)).json()["choices"][0]
        streamed = events((await c.post(path, json={**request, "stream": True})).text)
    choices = [e["choices"][0] for e in streamed if e["choices"]]
    ids = [t for ch in choices for t in ch.get("token_ids") or []]
    if "chat" in path:
        text = "".join(ch["delta"].get("content") or "" for ch in choices)
        assert text == full["message"]["content"]
    else:
        assert "".join(ch["text"] for ch in choices) == full["text"]
    assert ids == full["token_ids"]
    assert choices[-1]["finish_reason"] == full["finish_reason"]


async def test_stop_strings_and_logprobs_follow_generate() -> None:
    request = {
        "prompt": "def hello(",
        "max_tokens": 30,
        "seed": 2,
        "logprobs": 3,
        "ignore_eos": True,
    }
    async with asgi_client(["--enable-scale-out"]) as c:
        first = (await c.post("/v1/completions", json=request)).json()["choices"][0]
        stop = first["text"][4:6]
        stopped = (await c.post("/v1/completions", json={**request, "stop": [stop]})).json()
    choice = stopped["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["stop_reason"] == stop
    assert stop not in choice["text"] and first["text"].startswith(choice["text"])
    lp = first["logprobs"]
    assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"])
    assert all(1 <= len(top) <= 4 for top in lp["top_logprobs"])
    spoken = re.sub(r"<\|\w+\|>", "", "".join(lp["tokens"]))  # the text skips special tokens
    assert spoken == first["text"] or "\ufffd" in spoken


async def test_chat_on_tokens_only_is_vllms_400() -> None:
    async with asgi_client(PROFILES["tokens-only"]) as c:
        r = await c.post("/v1/chat/completions", json={"messages": HI})
    assert r.status_code == 400
    assert r.json()["error"]["message"] == "Tokenizer not available when `skip_tokenizer_init=True`"


async def test_the_key_guards_them_and_stats_count_them() -> None:
    async with asgi_client(["--enable-scale-out", "--api-key", "k"]) as c:
        assert (await c.post("/v1/completions", json={"prompt": [1]})).status_code == 401
        headers = {"Authorization": "Bearer k"}
        r = await c.post("/v1/completions", json={"prompt": [1], "max_tokens": 2}, headers=headers)
        assert r.status_code == 200
        stats = (await c.get("/mock/stats")).json()
    assert stats["received"] == 1 and stats["in_flight"] == 0


def test_a_client_that_goes_away_mid_stream_frees_its_slot() -> None:
    argv = ["--enable-scale-out", "--mock-itl-ms", "5", "--max-num-seqs", "1"]
    with running_server(argv) as url, httpx.Client(base_url=url, timeout=10) as c:
        body = {"prompt": [1, 2], "max_tokens": 2000, "ignore_eos": True, "stream": True}
        with c.stream("POST", "/v1/completions", json=body) as r:
            next(r.iter_lines())
        r2 = c.post("/v1/completions", json={"prompt": [1, 2], "max_tokens": 2})
        assert r2.status_code == 200
        assert c.get("/mock/stats").json()["in_flight"] == 0
