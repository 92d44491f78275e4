"""Catalogued defects change the wire: each probe's answer differs with and without its defect.

A probe is a quick, suite-free witness, not a toll: a new defect needs no row here. What proves
every defect, probed or not, is the suite run against it: test_conformance_blast_radius.py runs
the whole suite per defect (its declared requirements fail, little else does), and
test_conformance_defects.py holds the catalogue's targets to the requirements. The probes
here (and in test_mock_defects_more.py) are all kept.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from mock_server.behaviour.defects import DEFECTS
from mock_server.harness.testing import asgi_client, running_server

pytestmark = pytest.mark.anyio
GEN = "/inference/v1/generate"
SO = ["--enable-scale-out"]
B = {"token_ids": [1, 2, 3], "sampling_params": {"max_tokens": 4, "ignore_eos": True}}
Probe = Callable[[httpx.AsyncClient], Awaitable[Any]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sp(**kw: Any) -> dict[str, Any]:
    return {"token_ids": [1, 2, 3], "sampling_params": {"max_tokens": 4, "ignore_eos": True, **kw}}


async def j(c: httpx.AsyncClient, body: dict[str, Any], **headers: str) -> Any:
    return (await c.post(GEN, json=body, headers=headers)).json()


async def status(c: httpx.AsyncClient, body: Any, path: str = GEN, **kw: Any) -> int:
    return (await c.post(path, json=body, **kw)).status_code


def ch(data: Any) -> Any:
    return data["choices"][0]


async def raw(c: httpx.AsyncClient, body: dict[str, Any]) -> str:
    return (await c.post(GEN, json={**body, "stream": True})).text


def events(text: str) -> list[Any]:
    out = []
    for line in text.split("\n"):
        if line.startswith("data: {"):
            out.append(json.loads(line[6:]))
    return out


async def stop_probe(c: httpx.AsyncClient, text: bool = False) -> Any:
    base = sp(seed=9, max_tokens=10)
    if text:
        base["output_mode"] = "text"
    first = ch(await j(c, base))
    if text:
        stop = first["text"][4:7]
        return ch(
            await j(c, {**base, "sampling_params": {**base["sampling_params"], "stop": [stop]}})
        )
    stop_id = first["token_ids"][3]
    req = {**base, "sampling_params": {**base["sampling_params"], "stop_token_ids": [stop_id]}}
    return ch(await j(c, req))


async def eos_probe(c: httpx.AsyncClient) -> Any:
    for seed in range(200):
        choice = ch(
            await j(
                c, {"token_ids": [1, 2, 3], "sampling_params": {"max_tokens": 60, "seed": seed}}
            )
        )
        if choice["finish_reason"] == "stop":
            return choice["stop_reason"]
    raise AssertionError("no EOS")


async def special_probe(c: httpx.AsyncClient) -> Any:
    for seed in range(200):
        choice = ch(await j(c, {**sp(seed=seed, max_tokens=60), "output_mode": "text"}))
        if 151645 in choice["token_ids"]:
            return "<|im_end|>" in choice["text"]
    raise AssertionError("no special token")


async def abort_probe(c: httpx.AsyncClient) -> Any:
    task = asyncio.ensure_future(j(c, sp(max_tokens=400), **{"X-Request-Id": "ab"}))
    await asyncio.sleep(0.05)
    await c.post("/inference/v1/abort_requests", json={"request_ids": ["generate-tokens-ab"]})
    return ch(await task)["finish_reason"]


async def text_response(c: httpx.AsyncClient) -> Any:
    return await j(c, {**sp(), "output_mode": "text"})


async def derender_text(c: httpx.AsyncClient) -> Any:
    resp = await text_response(c)
    return await status(c, {"generate_responses": [resp]}, "/v1/completions/derender")


async def hang_probe(c: httpx.AsyncClient) -> Any:
    try:
        return await asyncio.wait_for(status(c, B), 0.3)
    except TimeoutError:
        return "timeout"


async def garbage_probe(c: httpx.AsyncClient) -> Any:
    try:
        return type((await c.post(GEN, json=B)).json()).__name__
    except json.JSONDecodeError:
        return "not json"


async def weight_reset_probe(c: httpx.AsyncClient) -> Any:
    await c.post("/update_weight_version", json={"new_version": "v9"})
    return ch(await j(c, B))["weight_versions"]


AUTH = ["--enable-scale-out", "--api-key", "k"]
PROBES: dict[str, tuple[list[str], Probe]] = {
    "request-id-no-prefix": (SO, lambda c: j(c, B, **{"X-Request-Id": "x"})),
    "request-id-body-wins": (SO, lambda c: j(c, {**B, "request_id": "b"}, **{"X-Request-Id": "h"})),
    "usage-miscount": (SO, lambda c: j(c, B)),
    "finish-reason-null": (SO, lambda c: j(c, B)),
    "max-tokens-default-16": (
        [*SO, "--max-model-len", "64"],
        lambda c: j(c, {"token_ids": [1], "sampling_params": {"ignore_eos": True}}),
    ),
    "max-tokens-overrun": (SO, lambda c: j(c, B)),
    "seed-ignored": (
        SO,
        lambda c: asyncio.gather(
            j(c, sp(seed=1, temperature=1.0)), j(c, sp(seed=1, temperature=1.0))
        ),
    ),
    "greedy-not-greedy": (SO, lambda c: j(c, sp(temperature=0, logprobs=1))),
    "n-ignored": (SO, lambda c: j(c, sp(n=2))),
    "prompt-token-ids-missing": (SO, lambda c: j(c, {**B, "return_token_ids": True})),
    "output-mode-not-echoed": (SO, text_response),
    "output-mode-wrong-echo": (SO, text_response),
    "unknown-field-rejected": (SO, lambda c: status(c, {**B, "frobnicate": 1})),
    "stop-token-dropped": (SO, stop_probe),
    "stop-reason-null": (SO, stop_probe),
    "stop-token-ids-ignored": (SO, stop_probe),
    "stop-string-not-cut": (SO, lambda c: stop_probe(c, text=True)),
    "stop-string-trims-tokens": (SO, lambda c: stop_probe(c, text=True)),
    "eos-stop-reason-set": (SO, eos_probe),
    "logprobs-legacy-token-id": (SO, lambda c: j(c, sp(logprobs=1))),
    "logprobs-positive": (SO, lambda c: j(c, sp(logprobs=1))),
    "logprobs-null": (SO, lambda c: j(c, sp(logprobs=1))),
    "logprobs-count-mismatch": (SO, lambda c: j(c, sp(logprobs=1))),
    "top-logprobs-sampled-not-first": (SO, lambda c: j(c, sp(logprobs=3, seed=5, max_tokens=30))),
    "top-logprobs-wrong-count": (SO, lambda c: j(c, sp(logprobs=2))),
    "rank-wrong": (SO, lambda c: j(c, sp(logprobs=1, seed=5, max_tokens=30))),
    "logprobs-over-max-accepted": (SO, lambda c: status(c, sp(logprobs=21))),
    "prompt-logprobs-no-leading-null": (SO, lambda c: j(c, sp(prompt_logprobs=1))),
    "stream-no-done": (SO, lambda c: raw(c, B)),
    "stream-bad-framing": (SO, lambda c: raw(c, B)),
    "stream-cumulative-deltas": (SO, lambda c: raw(c, B)),
    "stream-weight-versions-every-chunk": (SO, lambda c: raw(c, B)),
    "stream-finish-reason-early": (SO, lambda c: raw(c, B)),
    "stream-no-usage-chunk": (
        SO,
        lambda c: raw(c, {**B, "stream_options": {"include_usage": True}}),
    ),
    "stream-multi-choice-chunk": (SO, lambda c: raw(c, sp(n=2))),
    "stream-error-as-http": (SO, lambda c: status(c, {**sp(logprobs=21), "stream": True})),
    "text-no-bytes": (SO, lambda c: j(c, {**sp(logprobs=1), "output_mode": "text"})),
    "text-logprobs-tokens-shape": (SO, lambda c: j(c, {**sp(logprobs=1), "output_mode": "text"})),
    "text-missing": (SO, text_response),
    "skip-special-ignored": (SO, special_probe),
    "weight-versions-missing": (SO, lambda c: j(c, B)),
    "weight-versions-gap": (SO, lambda c: j(c, B)),
    "weight-versions-not-reset": (SO, weight_reset_probe),
    "weight-versions-empty-nonempty": (SO, lambda c: j(c, B, **{"X-Mock-Abort-After-Tokens": "0"})),
    "abort-ignored": ([*SO, "--mock-itl-ms", "1"], abort_probe),
    "abort-missing-ids-200": (SO, lambda c: status(c, {}, "/inference/v1/abort_requests")),
    "abort-finish-reason-length": (SO, lambda c: j(c, B, **{"X-Mock-Abort-After-Tokens": "2"})),
    "abort-no-partial-output": (SO, lambda c: j(c, B, **{"X-Mock-Abort-After-Tokens": "2"})),
    "abort-no-auth": (
        AUTH,
        lambda c: status(c, {"request_ids": []}, "/inference/v1/abort_requests"),
    ),
    "legacy-abort-requires-key": (
        ["--tokens-only", "--api-key", "k"],
        lambda c: status(c, {"request_ids": []}, "/abort_requests"),
    ),
    "legacy-abort-everywhere": (SO, lambda c: status(c, {"request_ids": []}, "/abort_requests")),
    "dp-rank-unchecked": (SO, lambda c: status(c, B, headers={"X-data-parallel-rank": "5"})),
    "dp-rank-non-int-400": (SO, lambda c: status(c, B, headers={"X-data-parallel-rank": "abc"})),
    "api-key-unchecked": (AUTH, lambda c: status(c, B)),
    "unauthorized-body-wrong": (AUTH, lambda c: j(c, B)),
    "health-guarded": (AUTH, lambda c: c.get("/health")),
    "disabled-404": ([], lambda c: j(c, B)),
    "disabled-message-wrong": ([], lambda c: j(c, B)),
    "disabled-validates-first": ([], lambda c: status(c, {"token_ids": []})),
    "tokens-only-stop-accepted": (["--tokens-only"], lambda c: status(c, sp(stop=["x"]))),
    "tokens-only-text-accepted": (
        ["--tokens-only"],
        lambda c: status(c, {**B, "output_mode": "text"}),
    ),
    "derender-accepts-text": (SO, derender_text),
    "render-generate-mismatch": (
        SO,
        lambda c: c.post("/v1/completions/render", json={"prompt": [1, 2], "max_tokens": 2}),
    ),
    "render-params-lost": (
        SO,
        lambda c: c.post("/v1/completions/render", json={"prompt": [1, 2], "max_tokens": 2}),
    ),
    "features-content-parts-accepted": (
        SO,
        lambda c: status(
            c,
            {
                **B,
                "features": {"mm_hashes": {}},
                "content_parts": [{"type": "image_url", "url": "x"}],
            },
        ),
    ),
    "validation-422": (SO, lambda c: status(c, {"token_ids": [], "sampling_params": {}})),
    "error-body-flat": (SO, lambda c: j(c, {"token_ids": [], "sampling_params": {}})),
    "empty-token-ids-accepted": (
        SO,
        lambda c: status(c, {"token_ids": [], "sampling_params": {"max_tokens": 2}}),
    ),
    "negative-token-ids-accepted": (
        SO,
        lambda c: status(c, {"token_ids": [5, -1], "sampling_params": {"max_tokens": 2}}),
    ),
    "oov-token-500": (
        SO,
        lambda c: asyncio.gather(
            status(c, {"token_ids": [151936], "sampling_params": {}}), status(c, B)
        ),
    ),
    "invalid-json-500": (
        SO,
        lambda c: c.post(GEN, content=b"{bad", headers={"content-type": "application/json"}),
    ),
    "wrong-content-type-accepted": (
        SO,
        lambda c: c.post(
            GEN, content=json.dumps(B).encode(), headers={"content-type": "text/plain"}
        ),
    ),
    "hang-generate": (SO, hang_probe),
    "garbage-json": (SO, garbage_probe),
    "schema-index-string": (SO, lambda c: j(c, B)),
}
VOLATILE = ("created", "request_id", "date")


def normalise(value: Any) -> Any:
    """Drop what differs between any two runs (timestamps, random ids)."""
    if isinstance(value, httpx.Response):
        try:
            body: Any = value.json()
        except json.JSONDecodeError:
            body = value.text
        return value.status_code, normalise(body)
    if isinstance(value, str) and value.startswith("data: "):
        return (
            [normalise(e) for e in events(value)],
            value.endswith("data: [DONE]\n\n"),
            "\n\n" in value,
        )
    if isinstance(value, dict):
        keep = {k: normalise(v) for k, v in value.items() if k not in VOLATILE}
        if "request_id" in value and isinstance(value["request_id"], str):
            rid = value["request_id"]
            keep["request_id"] = rid if len(rid) < 24 or "-" not in rid[-17:] else rid[:-16]
        return keep
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    return value


def test_every_probe_is_of_a_catalogued_defect() -> None:
    """No probe outlives its defect or is said twice; a defect without one is proven by the
    suite (this module's docstring)."""
    from test_mock_defects_more import MORE  # the later defects' probes (its own file)

    assert not set(PROBES) & set(MORE)
    assert set(PROBES) | set(MORE) <= set(DEFECTS)


@pytest.mark.parametrize("name", sorted(PROBES))
async def test_defect_changes_the_wire(name: str) -> None:
    argv, probe = PROBES[name]
    env = {"VLLM_SERVER_DEV_MODE": "1"} if name == "weight-versions-not-reset" else {}
    async with asgi_client(argv, env) as good:
        expected = normalise(await probe(good))
    async with asgi_client([*argv, "--mock-defect", name], env) as bad:
        observed = normalise(await probe(bad))
    assert observed != expected, f"{name} did not change the answer: {observed}"


async def test_disconnect_no_abort_leaves_request_running() -> None:
    argv = ["--enable-scale-out", "--mock-itl-ms", "2"]
    req = {**sp(max_tokens=300), "stream": True}
    results = []
    for extra in ([], ["--mock-defect", "disconnect-no-abort"]):
        with running_server(argv + extra) as url:
            async with httpx.AsyncClient(base_url=url) as c:
                async with c.stream("POST", GEN, json=req) as resp:
                    await anext(resp.aiter_lines())
                await asyncio.sleep(0.1)
                results.append((await c.get("/mock/stats")).json()["in_flight"])
    assert results == [0, 1]


async def test_oov_500_stops_a_real_server() -> None:
    with running_server(["--enable-scale-out", "--mock-defect", "oov-token-500"]) as url:
        async with httpx.AsyncClient(base_url=url) as c:
            r = await c.post(GEN, json={"token_ids": [151936], "sampling_params": {}})
            assert r.status_code == 500
            await asyncio.sleep(0.5)
            with pytest.raises(httpx.TransportError):
                await c.get("/health")


async def test_oov_500_leaves_a_dead_engine_unhealthy() -> None:
    """Until the process exits, /health says what vLLM's does for a dead engine: 503."""
    async with asgi_client(["--enable-scale-out", "--mock-defect", "oov-token-500"]) as c:
        assert (await c.get("/health")).status_code == 200
        r = await c.post(GEN, json={"token_ids": [151936], "sampling_params": {}})
        assert r.status_code == 500
        assert (await c.get("/health")).status_code == 503
