"""Non-streamed generate on the mock: shapes, sampling, stopping, limits, bad input."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mock_server.harness.testing import asgi_client
from openapi import schema_validator

pytestmark = pytest.mark.anyio
URL = "/inference/v1/generate"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


PROMPT = [151644, 872, 198]


async def gen(
    argv: list[str], body: dict[str, Any], headers: dict[str, str] | None = None, status: int = 200
) -> Any:
    async with asgi_client(argv) as client:
        r = await client.post(URL, json=body, headers=headers or {})
    assert r.status_code == status, r.text
    data = r.json()
    name = "GenerateResponse" if status == 200 else "ErrorResponse"
    schema_validator(name).validate(data)
    return data


SO = ["--enable-scale-out"]


def body(**sp: Any) -> dict[str, Any]:
    return {"token_ids": PROMPT, "sampling_params": sp}


async def test_basic_shape_and_key_order() -> None:
    data = await gen(SO, body(max_tokens=4, logprobs=1, ignore_eos=True))  # EOS is the model's
    assert list(data) == [
        "request_id",
        "model",
        "created",
        "usage",
        "prompt_logprobs",
        "prompt_token_id_logprobs",
        "prompt_token_ids",
        "mm_placeholders",
        "metrics",
        "kv_transfer_params",
        "ec_transfer_params",
        "output_mode",
        "choices",
    ]
    choice = data["choices"][0]
    assert list(choice) == [
        "index",
        "finish_reason",
        "stop_reason",
        "token_ids",
        "routed_experts",
        "sampling_mask",
        "weight_versions",
        "logprobs",
    ]
    assert data["request_id"].startswith("generate-tokens-") and data["output_mode"] == "tokens"
    assert len(choice["token_ids"]) == 4 and choice["finish_reason"] == "length"
    assert choice["weight_versions"] == [{"version": "default", "start": 0, "end": 4}]
    assert data["usage"] == {
        "prompt_tokens": 3,
        "total_tokens": 7,
        "completion_tokens": 4,
        "prompt_tokens_details": None,
        "completion_tokens_details": None,
    }


async def test_deterministic_seed_and_greedy() -> None:
    seeded = body(max_tokens=12, temperature=1.0, seed=7)
    a = await gen(SO, seeded)
    b = await gen(SO, seeded)
    assert a["choices"][0]["token_ids"] == b["choices"][0]["token_ids"]
    g = await gen(SO, body(max_tokens=6, temperature=0, logprobs=3))
    for entry in g["choices"][0]["logprobs"]["content"]:
        assert entry["rank"] == 1
        assert [t["rank"] for t in entry["top_logprobs"]] == [1, 2, 3]


async def test_logprobs_consistent() -> None:
    data = await gen(SO, body(max_tokens=20, temperature=1.0, seed=3, logprobs=5))
    choice = data["choices"][0]
    content = choice["logprobs"]["content"]
    assert [e["token_id"] for e in content] == choice["token_ids"]
    for e in content:
        top = e["top_logprobs"]
        assert len(top) == 5 and top[0]["token_id"] == e["token_id"]
        assert top[0]["logprob"] == e["logprob"] and top[0]["rank"] == e["rank"]
        others = top[1:]
        assert all(math.isfinite(t["logprob"]) and t["logprob"] <= 0 for t in top)
        assert [t["rank"] for t in others] == sorted(t["rank"] for t in others)
        assert all(t["rank"] != e["rank"] for t in others)
        # logprob decreases strictly with rank across the whole entry
        ordered = sorted(top, key=lambda t: t["rank"])
        assert all(x["logprob"] > y["logprob"] for x, y in zip(ordered, ordered[1:], strict=False))
    zero = await gen(SO, body(max_tokens=2, logprobs=0))
    assert all(len(e["top_logprobs"]) == 1 for e in zero["choices"][0]["logprobs"]["content"])


async def test_logprobs_over_max_is_400() -> None:
    err = await gen(SO, body(max_tokens=1, logprobs=21), status=400)
    assert err["error"]["param"] == "logprobs"
    assert "greater than max allowed: 20" in err["error"]["message"]
    await gen([*SO, "--max-logprobs", "30"], body(max_tokens=1, logprobs=21))


async def test_prompt_logprobs_shape() -> None:
    data = await gen(SO, body(max_tokens=1, prompt_logprobs=1))
    plp = data["prompt_logprobs"]
    assert len(plp) == 3 and plp[0] is None
    for entry, actual in zip(plp[1:], PROMPT[1:], strict=True):
        assert next(iter(entry)) == str(actual)
        assert any(v["rank"] == 1 for v in entry.values())
    assert plp[1][str(872)]["decoded_token"] == "user"
    tokonly = await gen(["--tokens-only"], body(max_tokens=1, prompt_logprobs=0))
    assert tokonly["prompt_logprobs"][1]["872"]["decoded_token"] is None


async def test_n_choices_and_limit() -> None:
    data = await gen(SO, body(max_tokens=3, n=3, seed=1))
    assert [c["index"] for c in data["choices"]] == [0, 1, 2]
    assert data["usage"]["completion_tokens"] == sum(len(c["token_ids"]) for c in data["choices"])
    err = await gen([*SO, "--max-num-seqs", "4"], body(max_tokens=2, n=5), status=400)
    assert err["error"]["message"] == (
        "sampling_params.n must be at most the server's max_num_seqs (4), got 5."
    )
    await gen(SO, body(max_tokens=2, n=2, temperature=0), status=400)


async def test_max_tokens_default_clamp_and_zero() -> None:
    argv = [*SO, "--max-model-len", "64"]
    data = await gen(argv, body(ignore_eos=True))
    assert len(data["choices"][0]["token_ids"]) == 61  # max_model_len - prompt, never 16
    data = await gen(argv, body(ignore_eos=True, max_tokens=100000))
    assert len(data["choices"][0]["token_ids"]) == 61
    err = await gen(argv, body(max_tokens=0), status=400)
    assert err["error"]["message"].startswith("max_tokens must be at least 1, got 0.")
    err = await gen(argv, {"token_ids": [5] * 64, "sampling_params": {}}, status=400)
    assert "maximum model length of 64" in err["error"]["message"]


async def _find_seed(predicate: Any, argv: list[str], **sp: Any) -> tuple[int, Any]:
    for seed in range(200):
        data = await gen(argv, body(seed=seed, **sp))
        if predicate(data["choices"][0]):
            return seed, data
    raise AssertionError("no seed found")


async def test_eos_stop_and_ignore_eos() -> None:
    seed, data = await _find_seed(lambda c: c["finish_reason"] == "stop", SO, max_tokens=60)
    choice = data["choices"][0]
    assert choice["stop_reason"] is None and choice["token_ids"][-1] == 151645
    again = await gen(SO, body(seed=seed, max_tokens=60, ignore_eos=True))
    assert again["choices"][0]["finish_reason"] == "length"
    n_eos = len(choice["token_ids"])
    later = await gen(SO, body(seed=seed, max_tokens=60, min_tokens=n_eos + 1))
    assert len(later["choices"][0]["token_ids"]) > n_eos


async def test_stop_token_ids_kept_with_reason() -> None:
    first = await gen(SO, body(max_tokens=8, seed=11))
    ids = first["choices"][0]["token_ids"]
    stop = ids[3]
    data = await gen(SO, body(max_tokens=8, seed=11, stop_token_ids=[stop]))
    choice = data["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["stop_reason"] == stop
    assert choice["token_ids"] == ids[: ids.index(stop) + 1]


async def test_request_id_rules() -> None:
    d = await gen(SO, {**body(max_tokens=1), "request_id": "b"}, {"X-Request-Id": "h"})
    assert d["request_id"] == "generate-tokens-h"
    d = await gen(SO, {**body(max_tokens=1), "request_id": "b"})
    assert d["request_id"] == "generate-tokens-b"


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("0", 200),
        (" 0 ", 200),
        ("+0", 200),
        ("abc", 200),
        ("1.5", 200),
        ("1", 400),
        ("-1", 400),
    ],
)
async def test_dp_rank_header(value: str, status: int) -> None:
    data = await gen(SO, body(max_tokens=1), {"x-DATA-parallel-RANK": value}, status=status)
    if status == 400:
        assert "out of range [0, 1)" in data["error"]["message"]


async def test_nulls_and_unknown_keys() -> None:
    sp = {
        "max_tokens": 2,
        "stop": None,
        "seed": None,
        "logprobs": None,
        "prompt_logprobs": None,
        "stop_token_ids": None,
        "output_kind": 2,
        "skip_clone": True,
        "bad_words": [],
        "skip_reading_prefix_cache": False,
        "extra_args": {},
        "flat_logprobs": False,
    }
    req = {
        "token_ids": PROMPT,
        "sampling_params": sp,
        "features": None,
        "cache_salt": None,
        "kv_transfer_params": None,
        "stream": None,
        "frobnicate": 1,
    }
    await gen(SO, req, {"X-Session-ID": "s"})
    for key in ("temperature", "top_p", "top_k", "n", "ignore_eos", "detokenize"):
        err = await gen(SO, body(max_tokens=1, **{key: None}), status=400)
        assert err["error"]["param"] == f"body.sampling_params.{key}"
    for key in ("request_id", "priority", "output_mode"):
        await gen(SO, {**body(max_tokens=1), key: None}, status=400)


@pytest.mark.parametrize(
    ("req", "needle"),
    [
        ({"sampling_params": {}}, "'missing', 'loc': 'body.token_ids'"),
        ({"token_ids": []}, "too_short"),
        ({"token_ids": [5, -1], "sampling_params": {}}, "must not contain negative values"),
        ({"token_ids": "hi", "sampling_params": {}}, "list_type"),
        ({"token_ids": [1]}, "'loc': 'body.sampling_params'"),
        ({"token_ids": [1], "sampling_params": {}, "output_mode": "bogus"}, "literal_error"),
        (
            {"token_ids": [1], "sampling_params": {"temperature": -1}},
            "temperature must be non-negative",
        ),
        (
            {"token_ids": [1], "sampling_params": {"detokenize": False}, "output_mode": "text"},
            "requires sampling_params.detokenize",
        ),
        ({"token_ids": [1], "sampling_params": {}, "cache_salt": ""}, "cache_salt"),
        (
            {
                "token_ids": [1],
                "sampling_params": {},
                "features": {},
                "content_parts": [{"type": "x"}],
            },
            "mutually exclusive",
        ),
        ({"token_ids": [151936], "sampling_params": {}}, "Token id 151936 is out of vocabulary"),
        (
            {
                "token_ids": [1],
                "stream": True,
                "sampling_params": {"prompt_logprob_token_ids": [[1]]},
            },
            "not available when stream=true",
        ),
    ],
)
async def test_bad_input_400(req: dict[str, Any], needle: str) -> None:
    err = await gen(SO, req, status=400)
    assert needle in err["error"]["message"]


async def test_model_name_404() -> None:
    await gen(SO, {**body(max_tokens=1), "model": "mock-model"})
    err = await gen(SO, {**body(max_tokens=1), "model": "nope"}, status=404)
    assert err["error"]["param"] == "model"


async def test_invalid_json_content_type_and_oversize() -> None:
    async with asgi_client([*SO, "--mock-max-body-bytes", "1000"]) as client:
        r = await client.post(
            URL, content=b'{"token_ids": [1,2,', headers={"content-type": "application/json"}
        )
        assert r.status_code == 400 and "json_invalid" in r.json()["error"]["message"]
        r = await client.post(
            URL,
            content=b'{"token_ids": [1], "sampling_params": {}}',
            headers={"content-type": "text/plain"},
        )
        assert r.status_code == 400 and "Unsupported Media Type" in r.json()["error"]["message"]
        r = await client.post(URL, json={"token_ids": [1] * 1000, "sampling_params": {}})
        assert r.status_code == 413
        schema_validator("ErrorResponse").validate(r.json())
        r = await client.get(URL)
        assert r.status_code == 405 and r.json() == {"detail": "Method Not Allowed"}


async def test_mock_return_error_header_and_stats() -> None:
    async with asgi_client(SO) as client:
        r = await client.post(URL, json=body(max_tokens=1), headers={"X-Mock-Return-Error": "503"})
        assert r.status_code == 503 and r.json()["error"]["code"] == 503
        await client.post(URL, json=body(max_tokens=2))
        stats = (await client.get("/mock/stats")).json()
    assert stats["received"] == 2 and stats["in_flight"] == 0
    assert stats["finished"]["length"] == 1


async def test_routed_experts_and_sampling_mask() -> None:
    argv = [*SO, "--enable-return-routed-experts", "--return-sampling-mask"]
    data = await gen(argv, body(max_tokens=3, top_k=5, seed=1, ignore_eos=True))
    choice = data["choices"][0]
    assert isinstance(choice["routed_experts"], str)
    assert [len(m) for m in choice["sampling_mask"]] == [5, 5, 5]
    assert all(t in m for t, m in zip(choice["token_ids"], choice["sampling_mask"], strict=True))
