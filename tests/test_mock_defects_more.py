"""The defects added for the suite's full coverage change the wire too (same pattern, own file)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from test_mock_defects import AUTH, GEN, SO, B, Probe, ch, j, normalise, raw, sp, status, stop_probe

from mock_server.harness.testing import asgi_client

pytestmark = pytest.mark.anyio
ABORT = "/inference/v1/abort_requests"
TO = ["--tokens-only"]
ITL = ["--mock-itl-ms", "1"]
R34 = [*SO, "--mock-vllm-version", "0.34"]
DERENDER = {"output_mode": "derender"}
AS_IDS = {"parse_context": {"return_tokens_as_token_ids": True}}
TEXT_LOGPROBS = {**sp(logprobs=2, temperature=1.0, seed=3), "output_mode": "text"}
USAGE = {"include_usage": True}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def text_stop(c: httpx.AsyncClient, **extra: Any) -> dict[str, Any]:
    """A seeded text-mode body whose output contains a stop string from its middle."""
    base = {**sp(seed=9, max_tokens=10), "output_mode": "text"}
    stop = ch(await j(c, base))["text"][5:7]
    return {**base, "sampling_params": {**base["sampling_params"], "stop": [stop], **extra}}


async def text_stop_stream_probe(c: httpx.AsyncClient) -> Any:
    return await raw(c, await text_stop(c))


async def include_stop_probe(c: httpx.AsyncClient) -> Any:
    return ch(await j(c, await text_stop(c, include_stop_str_in_output=True)))["text"]


async def held_text_probe(c: httpx.AsyncClient) -> Any:
    return await raw(c, await text_stop(c))


async def split_probe(c: httpx.AsyncClient) -> Any:
    task = asyncio.ensure_future(j(c, sp(max_tokens=60)))
    await asyncio.sleep(0.03)
    await c.post("/update_weight_version", json={"new_version": "v2"})
    return [s["version"] for s in ch(await task)["weight_versions"]]


async def legacy_abort_probe(c: httpx.AsyncClient) -> Any:
    task = asyncio.ensure_future(j(c, sp(max_tokens=400), **{"X-Request-Id": "ab"}))
    await asyncio.sleep(0.05)
    await c.post("/abort_requests", json={"request_ids": ["generate-tokens-ab"]})
    return ch(await task)["finish_reason"]


async def media(c: Any, body: Any) -> str | None:
    """The content type of a non-streamed generate answer."""
    return (await c.post("/inference/v1/generate", json=body)).headers.get("content-type")


async def derender_of_length(c: Any) -> Any:
    """The derender of a response that ended at its length."""
    response = await j(c, B)
    body = {"generate_responses": [response]}
    return (await c.post("/v1/completions/derender", json=body)).json()["choices"]


MORE: dict[str, tuple[list[str], Probe]] = {
    "api-key-generate-open": (AUTH, lambda c: status(c, B)),
    "tokens-mode-text": (SO, lambda c: j(c, B)),
    "token-ids-missing-accepted": (
        SO,
        lambda c: status(c, {"sampling_params": {"max_tokens": 2}}),
    ),
    "sampling-params-optional": (
        [*SO, "--max-model-len", "16"],
        lambda c: status(c, {"token_ids": [1, 2]}),
    ),
    "default-output-mode-text": (SO, lambda c: j(c, B)),
    "optional-fields-rejected": (SO, lambda c: status(c, {**B, "cache_salt": "tito-salt"})),
    "token-ids-as-strings": (SO, lambda c: j(c, B)),
    "token-ids-shifted": (SO, lambda c: j(c, B)),
    "errors-as-200": (SO, lambda c: status(c, {"token_ids": [], "sampling_params": {}})),
    "request-id-header-ignored": (SO, lambda c: j(c, B, **{"X-Request-Id": "x"})),
    "routed-experts-always": (SO, lambda c: j(c, B)),
    "scale-out-generate-404": (SO, lambda c: status(c, B)),
    "length-stop-reason-set": (SO, lambda c: j(c, B)),
    "abort-stop-reason-set": (SO, lambda c: j(c, B, **{"X-Mock-Abort-After-Tokens": "2"})),
    "include-stop-str-ignored": (SO, include_stop_probe),
    "logprobs-always": (SO, lambda c: j(c, B)),
    "tokens-logprobs-with-token": (SO, lambda c: j(c, sp(logprobs=1))),
    "stream-empty-chunk": (SO, lambda c: raw(c, B)),
    "stream-schema-error-200": (
        SO,
        lambda c: status(c, {"token_ids": [], "sampling_params": {}, "stream": True}),
    ),
    "stream-chunk-no-output-mode": (SO, lambda c: raw(c, B)),
    "stream-held-text-lost": (SO, held_text_probe),
    "stream-no-final-weight-versions": (SO, lambda c: raw(c, B)),
    "stream-weight-versions-short": (SO, lambda c: raw(c, B)),
    "text-mode-other-tokens": (SO, lambda c: j(c, {**sp(seed=3), "output_mode": "text"})),
    "stream-text-cumulative": (SO, lambda c: raw(c, {**sp(seed=3), "output_mode": "text"})),
    "text-detokenize-false-accepted": (
        SO,
        lambda c: status(c, {**sp(detokenize=False), "output_mode": "text"}),
    ),
    "placeholder-wrong-id": (
        [*SO, "--return-tokens-as-token-ids"],
        lambda c: j(c, {**sp(logprobs=1), "output_mode": "text"}),
    ),
    "weight-label-not-default": (SO, lambda c: j(c, B)),
    "weight-update-no-split": ([*SO, "--mock-itl-ms", "2"], split_probe),
    "abort-route-missing": (SO, lambda c: status(c, {"request_ids": []}, ABORT)),
    "abort-json-body": (SO, lambda c: c.post(ABORT, json={"request_ids": []})),
    "dev-abort-count-renamed": (SO, lambda c: c.post("/abort_requests", json={"request_ids": []})),
    "generate-json-as-text": (SO, lambda c: media(c, B)),
    "derender-finish-stop": (SO, derender_of_length),
    # a rule broken in one kind of answer only
    "stream-ranks-shifted": (SO, lambda c: raw(c, sp(logprobs=2, temperature=1.0, seed=3))),
    "text-logprobs-short": (SO, lambda c: j(c, TEXT_LOGPROBS)),
    "text-sampled-not-first": (SO, lambda c: j(c, TEXT_LOGPROBS)),
    "text-logprobs-positive": (SO, lambda c: j(c, TEXT_LOGPROBS)),
    "text-stream-bytes-wrong": (SO, lambda c: raw(c, TEXT_LOGPROBS)),
    "text-spans-short": (SO, lambda c: j(c, {**sp(), "output_mode": "text"})),
    "text-stream-spans-short": (SO, lambda c: raw(c, {**sp(), "output_mode": "text"})),
    "choices-short-with-logprobs": (SO, lambda c: j(c, sp(n=2, seed=3, logprobs=1))),
    "text-request-id-other": (SO, lambda c: j(c, {**sp(), "output_mode": "text"})),
    "prompt-logprobs-ranks-shifted": (SO, lambda c: j(c, sp(prompt_logprobs=1))),
    "text-stream-ids-shifted": (SO, lambda c: raw(c, {**sp(), "output_mode": "text"})),
    "text-stream-stop-reason-other": (SO, text_stop_stream_probe),
    "stream-error-code-500": (SO, lambda c: raw(c, sp(logprobs=21))),
    "text-label-other": (SO, lambda c: j(c, {**sp(), "output_mode": "text"})),
    "usage-chunk-other-id": (SO, lambda c: raw(c, {**sp(), "stream_options": USAGE})),
    "text-stream-top-logprobs-short": (SO, lambda c: raw(c, TEXT_LOGPROBS)),
    "usage-chunk-other-mode": (SO, lambda c: raw(c, {**sp(), "stream_options": USAGE})),
    "legacy-abort-ignored": ([*TO, *ITL], legacy_abort_probe),
    "dp-rank-zero-rejected": (SO, lambda c: status(c, B, headers={"X-data-parallel-rank": "0"})),
    "disabled-abort-open": ([], lambda c: status(c, {"request_ids": []}, ABORT)),
    "tokens-only-generate-403": (TO, lambda c: status(c, B)),
    "tokens-only-detokenize-text": (TO, lambda c: status(c, sp(detokenize=True))),
    "tokens-only-stop-token-ids-ignored": (TO, stop_probe),
    "render-missing": (SO, lambda c: c.post("/v1/completions/render", json={"prompt": [1, 2]})),
    "output-mode-any-accepted": (SO, lambda c: status(c, {**B, "output_mode": "bogus"})),
    "type-error-500": (SO, lambda c: status(c, sp(temperature="x"))),
    "null-rejected": (SO, lambda c: status(c, sp(stop=None))),
    "max-tokens-zero-accepted": (SO, lambda c: status(c, sp(max_tokens=0))),
    # release extensions (the mock plays 0.34)
    "derender-content-wrong": (R34, lambda c: j(c, {**sp(logprobs=1), **DERENDER})),
    "derender-stream-no-role": (R34, lambda c: raw(c, {**B, **DERENDER})),
    "parse-context-ignored": (R34, lambda c: j(c, {**sp(logprobs=1), **DERENDER, **AS_IDS})),
    "parse-context-read-everywhere": (
        R34,
        lambda c: j(c, {**sp(logprobs=1), "output_mode": "text", **AS_IDS}),
    ),
}
DEV = {"weight-update-no-split", "dev-abort-count-renamed"}  # VLLM_SERVER_DEV_MODE=1 routes


@pytest.mark.parametrize("name", sorted(MORE))
async def test_defect_changes_the_wire(name: str) -> None:
    argv, probe = MORE[name]
    env = {"VLLM_SERVER_DEV_MODE": "1"} if name in DEV else {}
    async with asgi_client(argv, env) as good:
        expected = normalise(await probe(good))
    async with asgi_client([*argv, "--mock-defect", name], env) as bad:
        observed = normalise(await probe(bad))
    assert observed != expected, f"{name} did not change the answer: {observed}"


async def test_allowed_token_ids_restrict_sampling() -> None:
    """Not a defect: the feature TEXT-008's check relies on (vLLM masks the other logits)."""
    async with asgi_client(SO) as c:
        for params in (sp(seed=4, max_tokens=8), sp(temperature=0, max_tokens=8)):
            params["sampling_params"]["allowed_token_ids"] = [5, 7, 9000]
            assert set(ch(await j(c, params))["token_ids"]) <= {5, 7, 9000}
        for bad in ([], [-1], [151936]):
            assert await status(c, sp(allowed_token_ids=bad)) == 400
        assert (await c.post(GEN, json=sp(allowed_token_ids=None))).status_code == 200
