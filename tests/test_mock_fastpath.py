"""The non-streamed generate's fast paths answer what the general paths answer, byte for byte.

Three shortcuts (issue 11, round 2): `parse_plain` for plain bodies, `Engine.complete` for
requests that read no events, and the direct route to the generate endpoint past Starlette's
router. Each is compared here with the path it shortcuts, on the same requests.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mock_server.behaviour.config import FastPaths, parse_args
from mock_server.engine.core import Engine, Job
from mock_server.harness.testing import asgi_client
from mock_server.parsing.request import parse_generate, parse_plain
from mock_server.wire.errors import ApiError, ValidationFailure

PROMPT = [151644, 872, 198]


def gen(sp: Any = None, **top: Any) -> dict[str, Any]:
    body = {"token_ids": PROMPT, "sampling_params": {"max_tokens": 16} if sp is None else sp}
    return {**body, **top}


BODIES: list[Any] = [
    gen(),
    gen({"max_tokens": 16, "ignore_eos": True}),
    gen({"max_tokens": 40, "seed": 3, "n": 3}),
    gen({"max_tokens": 8, "temperature": 0}),
    gen({"max_tokens": 8, "temperature": 0.7, "top_k": 5, "top_p": 0.9, "min_p": 0.05}),
    gen({"max_tokens": 8, "temperature": 0.001, "top_k": -1}),
    gen({"max_tokens": 10, "min_tokens": 5, "seed": 5, "ignore_eos": False}),
    gen({}),
    gen({"max_tokens": 8}, request_id='r\u00e9"\\', model="mock-model", stream=False),
    gen({"max_tokens": 8}, model="nope"),
    gen({"max_tokens": 8}, stream=True),
    gen({"max_tokens": 8, "seed": 2**64}),
    gen({"max_tokens": 8, "seed": -1}),
    gen({"max_tokens": 8, "n": 2, "temperature": 0}),
    gen({"max_tokens": 0}),
    gen({"max_tokens": 3, "min_tokens": 5}),
    gen({"max_tokens": 8, "temperature": 2.5}),
    gen({"max_tokens": 8, "top_p": 0}),
    gen({"max_tokens": 8, "n": 0}),
    gen({"max_tokens": 8, "n": 10**6}),
    gen({"max_tokens": 8, "logprobs": 2}),
    gen({"max_tokens": 8, "stop_token_ids": [198]}),
    gen({"max_tokens": 40, "seed": 1, "n": 3, "stop_token_ids": [5, 9, 11], "min_tokens": 1}),
    gen({"max_tokens": 40, "seed": 2, "stop": ["a", "e"]}),
    gen({"max_tokens": 40, "seed": 2, "stop": ["a", "e"]}, return_token_ids=True),
    gen({"max_tokens": 16.0}),
    gen({"max_tokens": True}),
    gen({"max_tokens": "8"}),
    gen({"max_tokens": None}),
    gen({"ignore_eos": 1}),
    gen({"temperature": None}),
    gen({"temperature": float("nan")}),
    gen(None, extra=1) | {"sampling_params": {"max_tokens": 2}},
    {"token_ids": [], "sampling_params": {}},
    {"token_ids": [-1], "sampling_params": {}},
    {"token_ids": [True, 2], "sampling_params": {}},
    {"token_ids": [1.0], "sampling_params": {}},
    {"token_ids": [10**30], "sampling_params": {"max_tokens": 2}},
    {"token_ids": [999999], "sampling_params": {"max_tokens": 2}},
    {"token_ids": PROMPT},
    {"sampling_params": {}},
    gen(request_id=5),
    gen(stream="yes"),
    gen(stream=None),
    gen(output_mode="text"),
    gen(return_token_ids=True),
    [1, 2],
    None,
]


def _outcome(parse: Any, body: Any, argv: list[str]) -> Any:
    try:
        return parse(body, parse_args(argv))
    except (ApiError, ValidationFailure) as exc:
        return repr(exc)


@pytest.mark.parametrize("body", BODIES)
def test_plain_parse_is_the_general_parse(body: Any) -> None:
    cfg = parse_args(["--enable-scale-out"])
    plain = parse_plain(json.loads(json.dumps(body)), cfg)
    if plain is not None:
        assert plain == parse_generate(json.loads(json.dumps(body)), cfg)


def test_plain_parse_takes_the_common_bodies_unless_a_validate_policy_is_on() -> None:
    """Only a policy of the validate stage turns its fast path off (issue 19)."""
    cfg = parse_args(["--enable-scale-out"])
    assert parse_plain(gen({"max_tokens": 16, "ignore_eos": True}), cfg) is not None
    assert parse_plain(gen({"max_tokens": 16, "seed": 1, "temperature": 0.5}), cfg) is not None
    other_stage = parse_args(["--enable-scale-out", "--mock-defect", "n-ignored"])
    assert parse_plain(gen(), other_stage) is not None
    flawed = parse_args(["--enable-scale-out", "--mock-defect", "empty-token-ids-accepted"])
    assert parse_plain(gen(), flawed) is None


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 5000),
    st.sampled_from([2**63, -(2**64), 2**64]),
    st.floats(-3, 3) | st.just(float("nan")),
    st.text(max_size=3),
)
_SP_KEYS = ["max_tokens", "ignore_eos", "seed", "n", "min_tokens", "top_k", "temperature"]
_SP_KEYS += ["top_p", "min_p", "logprobs", "stop"]


@settings(max_examples=300, deadline=None)
@given(
    sp=st.dictionaries(st.sampled_from(_SP_KEYS), _SCALARS, max_size=5),
    top=st.dictionaries(st.sampled_from(["request_id", "model", "stream", "priority"]), _SCALARS),
    ids=st.lists(st.one_of(st.integers(-1, 151936), st.booleans(), st.floats(0, 9)), max_size=4),
)
def test_plain_parse_agrees_on_drawn_bodies(sp: Any, top: Any, ids: Any) -> None:
    cfg = parse_args(["--enable-scale-out"])
    body = {"token_ids": ids, "sampling_params": sp, **top}
    plain = parse_plain(json.loads(json.dumps(body)), cfg)
    if plain is not None:
        assert plain == parse_generate(json.loads(json.dumps(body)), cfg)


def _records(engine: Engine, body: Any, abort_after: int | None, complete: bool) -> Any:
    req = parse_generate(body, engine.cfg)
    job = Job(request_id="r", req=req, max_tokens=req.sampling.max_tokens or 20)
    job.abort_after = abort_after

    async def drive() -> None:
        if complete:
            await engine.complete(job, lambda: None)
        else:
            async for _ in engine.run(job):
                pass

    asyncio.run(drive())
    seqs = [(s.index, s.records, s.finish_reason, s.stop_reason) for s in job.sequences]
    return seqs, engine.stats()


ENGINE_CASES = [
    ([], gen({"max_tokens": 40, "n": 3})),
    ([], gen({"max_tokens": 40, "seed": 1, "n": 2, "logprobs": 3, "min_tokens": 30})),
    (["--return-sampling-mask"], gen({"max_tokens": 9, "top_k": 4, "allowed_token_ids": [1, 5]})),
    (["--mock-itl-ms", "1"], gen({"max_tokens": 5, "stop_token_ids": [198, 11], "seed": 4})),
    (["--mock-ttft-ms", "1", "--mock-defect", "abort-stop-reason-set"], gen({"max_tokens": 30})),
    (["--mock-vocab-size", "512"], {"token_ids": [511, 3], "sampling_params": {"max_tokens": 60}}),
    ([], gen({"max_tokens": 20, "stop": ["a", "e"], "temperature": 0})),
]


@pytest.mark.parametrize(("argv", "body"), ENGINE_CASES)
@pytest.mark.parametrize("abort_after", [None, 0, 3, 17])
def test_complete_makes_what_run_makes(argv: list[str], body: Any, abort_after: Any) -> None:
    """Tokens, records, finish and stop reasons, stats: the engine's generator given as many
    requests in the same order (unseeded ones draw from the server's generator)."""
    cfg = parse_args(["--enable-scale-out", *argv])
    ran, completed = Engine(cfg), Engine(cfg)
    for _ in range(2):
        assert _records(completed, body, abort_after, True) == _records(
            ran, body, abort_after, False
        )


def test_complete_waits_only_after_telling() -> None:
    """on_wait comes before the first hand-over, and only when there is one."""
    calls: list[str] = []

    async def one(argv: list[str], max_tokens: int) -> None:
        engine = Engine(parse_args(["--enable-scale-out", *argv]))
        req = parse_generate(gen({"max_tokens": max_tokens, "ignore_eos": True}), engine.cfg)
        job = Job(request_id="r", req=req, max_tokens=max_tokens)
        calls.clear()
        await engine.complete(job, lambda: calls.append("wait"))

    asyncio.run(one([], 16))
    assert calls == []  # 16 tokens in one go: nothing else ran, no watcher needed
    asyncio.run(one([], 17))
    assert calls == ["wait"]
    asyncio.run(one(["--mock-itl-ms", "1"], 2))
    assert calls == ["wait"]


CREATED = re.compile(rb'"created":\d+')
REQUESTS: list[tuple[list[str], Any, dict[str, str]]] = [
    (argv, body, headers)
    for argv in (
        ["--enable-scale-out"],
        ["--enable-scale-out", "--api-key", "k"],
        ["--tokens-only"],
        ["--enable-scale-out", "--mock-defect", "request-id-body-wins"],
        ["--enable-scale-out", "--mock-itl-ms", "1"],
        [],
    )
    for body, headers in [
        *((b, {"X-Request-Id": "fixed"}) for b in BODIES),
        (gen(), {}),
        (gen({"max_tokens": 30, "seed": 1}), {"Authorization": "Bearer k"}),
        (gen({"max_tokens": 30, "seed": 1}), {"X-Mock-Abort-After-Tokens": "4"}),
        (gen(), {"X-Mock-Return-Error": "503"}),
        (gen(), {"Content-Type": "text/plain"}),
        (gen(), {"X-data-parallel-rank": "3"}),
    ]
]


async def _answers(fast: FastPaths) -> list[tuple[int, Any, bytes]]:
    out = []
    clients: dict[str, Any] = {}
    for argv, body, headers in REQUESTS:
        key = " ".join(argv)
        if key not in clients:
            clients[key] = asgi_client(argv, fast=fast)
        content = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **headers}
        r = await clients[key].post("/inference/v1/generate", content=content, headers=headers)
        out.append((r.status_code, sorted(r.headers.items()), CREATED.sub(b"", r.content)))
    for client in clients.values():
        await client.aclose()
    return out


def test_fast_paths_answer_what_the_general_paths_answer() -> None:
    fast = asyncio.run(_answers(FastPaths()))
    general = asyncio.run(_answers(FastPaths(generate=False, direct=False)))
    assert len(fast) == len(REQUESTS)
    unseeded = re.compile(rb"generate-tokens-[0-9a-f]{16}")  # a random id without a header
    for a, b in zip(fast, general, strict=True):
        assert a[:2] == b[:2]
        assert unseeded.sub(b"", a[2]) == unseeded.sub(b"", b[2])
