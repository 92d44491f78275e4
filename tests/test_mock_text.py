"""Text mode: the mock's real tokenizer, stop strings, held-back text, special tokens."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mock_server.engine.tokenizer import _NAMED, IncrementalDetokenizer, Tokenizer
from mock_server.harness.testing import asgi_client
from openapi import schema_validator

pytestmark = pytest.mark.anyio
URL = "/inference/v1/generate"
SO = ["--enable-scale-out"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_tokenizer_qwen_ids_and_roundtrip() -> None:
    tok = Tokenizer(151936)
    assert tok.decode([151644, 872, 198], skip_special_tokens=False) == "<|im_start|>user\n"
    assert tok.eos_id == 151645
    text = "<|im_start|>user\nhi there, naïve 中文 😀<|im_end|>\n"
    ids = tok.encode(text)
    assert ids[0] == 151644 and 151645 in ids
    assert tok.decode(ids, skip_special_tokens=False) == text
    small = Tokenizer(2048)
    assert (small.endoftext_id, small.im_start_id, small.eos_id) == (2045, 2046, 2047)


@pytest.mark.parametrize("vocab", [300, 2048, 151936])
def test_encoding_table_is_each_pieces_lowest_id(vocab: int) -> None:
    """The table is built in one pass (every mock builds it); it must name, for each piece
    `piece()` decodes, the lowest id with that piece (a named Qwen id wins over its word)."""
    tok = Tokenizer(vocab)
    table, longest = tok._table
    lowest: dict[bytes, int] = {}
    for token_id in range(tok.first_special):
        lowest.setdefault(tok.piece(token_id), token_id)
    lowest.update({p: i for i, p in _NAMED.items() if i < tok.first_special})
    assert table == lowest
    assert longest == max(map(len, lowest))


def test_incremental_detokenizer_splits_utf8_and_holds_stop() -> None:
    tok = Tokenizer(151936)
    ids = tok.encode("中")
    assert len(ids) >= 2  # byte fallback splits the character
    det = IncrementalDetokenizer(tok, [], False, True)
    for t in ids[:-1]:
        det.add(t)
        assert det.delta(False) == ""
    det.add(ids[-1])
    assert det.delta(False) == "中"
    det = IncrementalDetokenizer(tok, ["ab"], False, True)
    det.add(tok.encode("xa")[0])
    for t in tok.encode("xa")[1:]:
        det.add(t)
    assert det.delta(False) == "x"  # "a" held back: it may start "ab"
    assert det.add(tok.encode("b")[0]) == "ab"
    assert det.delta(True) == "" and det.text == "x"


async def post(argv: list[str], req: dict[str, Any]) -> Any:
    async with asgi_client(argv) as client:
        r = await client.post(URL, json=req)
    assert r.status_code == 200, r.text
    return r.content if req.get("stream") else r.json()


async def test_text_mode_response() -> None:
    req = {
        "token_ids": [1, 2, 3],
        "output_mode": "text",
        "sampling_params": {"max_tokens": 8, "seed": 2, "logprobs": 2},
    }
    data = await post(SO, req)
    schema_validator("GenerateTextResponse").validate(data)
    choice = data["choices"][0]
    assert list(choice)[-2:] == ["text", "logprobs"] and data["output_mode"] == "text"
    tok = Tokenizer(151936)
    assert choice["text"] == tok.decode(choice["token_ids"])
    for entry in choice["logprobs"]["content"]:
        assert bytes(entry["bytes"]) == entry["token"].encode()
        assert len(entry["top_logprobs"]) == 2
    tid = await post([*SO, "--return-tokens-as-token-ids"], req)
    entry = tid["choices"][0]["logprobs"]["content"][0]
    assert entry["token"].startswith("token_id:") and entry["bytes"] is None


async def test_stop_string_cut_and_included() -> None:
    base = {
        "token_ids": [1, 2, 3],
        "output_mode": "text",
        "sampling_params": {"max_tokens": 12, "seed": 4, "ignore_eos": True},
    }
    full = await post(SO, base)
    text = full["choices"][0]["text"]
    stop = text[5:8]
    sp = {**base["sampling_params"], "stop": [stop]}
    cut = (await post(SO, {**base, "sampling_params": sp}))["choices"][0]
    assert cut["finish_reason"] == "stop" and cut["stop_reason"] == stop
    assert cut["text"] == text[: text.index(stop)]
    assert Tokenizer(151936).decode(cut["token_ids"]).startswith(text[: text.index(stop) + 3])
    sp["include_stop_str_in_output"] = True
    inc = (await post(SO, {**base, "sampling_params": sp}))["choices"][0]
    assert inc["text"] == text[: text.index(stop) + len(stop)]
    raw = await post(
        SO, {**base, "stream": True, "sampling_params": {**sp, "include_stop_str_in_output": False}}
    )
    chunks = [
        json.loads(line[6:]) for line in raw.decode().split("\n\n") if line.startswith("data: {")
    ]
    assert "".join(c["choices"][0]["text"] for c in chunks) == cut["text"]
    tokens_mode = await post(SO, {"token_ids": [1, 2, 3], "sampling_params": sp})
    assert (
        tokens_mode["choices"][0]["stop_reason"] == stop and "text" not in tokens_mode["choices"][0]
    )


async def test_skip_special_tokens() -> None:
    req = {
        "token_ids": [1, 2, 3],
        "output_mode": "text",
        "sampling_params": {"max_tokens": 60, "ignore_eos": True, "seed": 0},
    }
    for seed in range(100):
        req["sampling_params"]["seed"] = seed
        data = await post(SO, req)
        if 151645 in data["choices"][0]["token_ids"]:
            break
    assert "<|im_end|>" not in data["choices"][0]["text"]
    req["sampling_params"]["skip_special_tokens"] = False
    assert "<|im_end|>" in (await post(SO, req))["choices"][0]["text"]


async def test_tokens_only_rejections() -> None:
    async with asgi_client(["--tokens-only"]) as client:
        r = await client.post(
            URL, json={"token_ids": [1], "output_mode": "text", "sampling_params": {}}
        )
        assert r.status_code == 400 and "requires a tokenizer" in r.json()["error"]["message"]
        r = await client.post(URL, json={"token_ids": [1], "sampling_params": {"stop": ["x"]}})
        assert r.status_code == 400 and "--tokens-only" in r.json()["error"]["message"]
        r = await client.post(
            URL, json={"token_ids": [1], "sampling_params": {"stop": [], "max_tokens": 1}}
        )
        assert r.status_code == 200
        r = await client.post(URL, json={"token_ids": [151936], "sampling_params": {}})
        assert r.status_code == 400 and "out of vocabulary" in r.json()["error"]["message"]
