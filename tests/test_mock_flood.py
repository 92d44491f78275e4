"""A bounded flood of malformed bodies, mixed with valid requests, against a real loopback
mock (issue 11, part 4): no 5xx, no hang, no growth of memory.

Deep nesting, lone surrogates, NaN and Infinity, huge arrays and integers, 10 MB bodies,
truncated JSON and wrong types, on every route the mock serves. Each flood is the same
deterministic list; the first warms the process up, the second must not grow its resident
memory by more than a generous bound (a leak per request would show as megabytes). The whole
test stays well under 30 s on a loaded 2-core machine."""

from __future__ import annotations

import contextlib
import json
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from loopback.ports import free_port
from loopback.processes import start_session, stop_session
from loopback.readiness import wait_ready
from loopback.timeouts import MOCK_START_S

ARGV = ["--enable-scale-out", "--mock-vocab-size", "2048", "--max-model-len", "512"]
ENV = {"VLLM_SERVER_DEV_MODE": "1"}
SEED = 11
TIMEOUT = 20.0
WORKERS = 3
GROWTH_LIMIT_MB = 48
GEN = "/inference/v1/generate"
VALID: list[tuple[str, Any]] = [
    (GEN, {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 3, "seed": 1}}),
    (GEN, {"token_ids": [5], "stream": True, "sampling_params": {"max_tokens": 2}}),
    ("/v1/completions/render", {"prompt": "def hello(", "max_tokens": 3}),
    ("/v1/chat/completions/render", {"messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/messages/render", {"model": "mock-model", "max_tokens": 3, "messages": []}),
    ("/v1/responses/render", {"input": "hi", "max_output_tokens": 3}),
    ("/tokenize", {"prompt": "hello there"}),
    ("/detokenize", {"tokens": [5, 6, 7]}),
    ("/v1/completions", {"prompt": [5, 6], "max_tokens": 3}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}),
    ("/inference/v1/abort_requests", {"request_ids": ["nope"]}),
    ("/abort_requests", {"request_ids": ["nope"]}),
    ("/update_weight_version", {"new_version": "v1"}),
]
PATHS = sorted({path for path, _ in VALID} | {"/v1/chat/completions/derender"})
PATHS.append("/v1/completions/derender")
TEN_MB = 10 * 1024 * 1024
WEIRD: list[Any] = [
    None, True, -1, 0, 2**64, -(2**63) - 1, 1e308, 3.5, "", "x", "\ud800",
    [], [None], {}, {"a": []}, [[[]]], "9" * 50,
]  # fmt: skip
NON_FINITE = (b"NaN", b"Infinity", b"-Infinity")


def _dump(obj: Any) -> bytes:
    """JSON bytes; lone surrogates written as escapes, as a client's encoder would."""
    return json.dumps(obj, allow_nan=True).encode()


def _retype(rng: random.Random, obj: Any) -> Any:
    """Replace one value somewhere in `obj` by a value of another type."""
    if isinstance(obj, dict) and obj and rng.random() < 0.8:
        key = rng.choice(list(obj))
        return {**obj, key: _retype(rng, obj[key])}
    if isinstance(obj, list) and obj and rng.random() < 0.8:
        i = rng.randrange(len(obj))
        return [*obj[:i], _retype(rng, obj[i]), *obj[i + 1 :]]
    return rng.choice(WEIRD)


def _nested(depth: int, closed: bool) -> bytes:
    opener = b"[" * depth
    return opener + b"]" * depth if closed else opener


def malformed(rng: random.Random) -> Iterator[tuple[str, bytes]]:
    """(path, body) pairs: every kind of bad input on every route."""
    for path in PATHS:
        for depth in (255, 300, 1_000, 10_000):
            yield path, _nested(depth, closed=depth != 10_000)
        yield path, b'{"a":' * 2_000
        yield path, b'{"x":"a\xed\xa0\x80"}'
        yield path, b'{"x\\udfff":1,"request_id":"\\ud800"}'
        yield (
            path,
            b'{"prompt":"\\ud800","tokens":[1],"messages":[{"role":"user","content":"\\udc00"}]}',
        )
        yield path, b'{"request_ids":' + b"1" * 5_000 + b"}"
        yield path, b"\xff\xfe\x00garbage"
    for path, body in VALID:
        raw = _dump(body)
        for _ in range(12):
            yield path, raw[: rng.randrange(1, max(len(raw), 2))]  # truncated
            yield path, _dump(_retype(rng, body))
        if isinstance(body, dict):
            for key in list(body)[:3]:
                for constant in NON_FINITE:
                    yield path, _dump({**body, key: 0}).replace(b": 0", b": " + constant, 1)
    sp_keys = ["temperature", "top_p", "min_p", "presence_penalty", "repetition_penalty", "seed"]
    sp_keys += ["max_tokens", "logprobs", "n", "min_tokens", "top_k", "priority"]
    for key in sp_keys:
        for constant in NON_FINITE:
            raw = b'{"token_ids":[1,2],"sampling_params":{"max_tokens":2,"%s":%s}}'
            yield GEN, raw % (key.encode(), constant)
    gen_response = {
        "request_id": "generate-tokens-x",
        "output_mode": "tokens",
        "metrics": {"time_to_first_token_ms": 1.0},
        "choices": [
            {
                "index": 0,
                "finish_reason": "length",
                "token_ids": [5, 6],
                "logprobs": {"content": [{"token_id": 5, "logprob": -1.0, "top_logprobs": []}]},
            }
        ],
    }
    raw = _dump({"generate_response": gen_response})
    for old in (b"-1.0", b"1.0"):
        for constant in NON_FINITE:
            yield "/v1/chat/completions/derender", raw.replace(old, constant, 1)
    deep_echo = {**gen_response, "kv_transfer_params": json.loads(_nested(250, True))}
    yield "/v1/chat/completions/derender", _dump({"generate_response": deep_echo})
    huge = {"token_ids": list(range(1, 100_000)), "sampling_params": {"max_tokens": 2}}
    yield GEN, _dump(huge)
    yield GEN, _dump({"token_ids": [1], "sampling_params": {"stop": ["ab"] * 20_000}})
    yield (
        GEN,
        _dump(
            {
                "token_ids": [1],
                "sampling_params": {"logit_bias": {str(i): 1 for i in range(20_000)}},
            }
        ),
    )
    yield GEN, _dump({"token_ids": [1], "sampling_params": {"n": 10**9, "max_tokens": 10**30}})
    yield "/detokenize", _dump({"tokens": list(range(200_000))})
    yield "/tokenize", _dump({"prompt": "a" * 500_000})
    ids = b"[" + b",".join([b"1"] * (TEN_MB // 2)) + b"]"
    yield GEN, b'{"token_ids":' + ids + b',"sampling_params":{"max_tokens":2}}'
    yield GEN, _dump({"token_ids": [1], "request_id": "r" * TEN_MB, "sampling_params": {}})
    # text is tokenized in pure Python (~2 s per MB on a loaded core): 1 MB keeps it bounded
    yield "/v1/completions", _dump({"prompt": "z" * (TEN_MB // 10), "max_tokens": 1})


def flood() -> list[tuple[str, bytes, bool]]:
    """The malformed bodies with a valid request after every tenth, in a fixed order."""
    rng = random.Random(SEED)
    items: list[tuple[str, bytes, bool]] = []
    for i, (path, raw) in enumerate(malformed(rng)):
        items.append((path, raw, False))
        if i % 10 == 0:
            path, body = VALID[(i // 10) % len(VALID)]
            items.append((path, _dump(body), True))
    return items


@contextlib.contextmanager
def mock_process() -> Iterator[tuple[str, int]]:
    """The mock as a process of its own (base URL, pid): its memory is its own, where a server
    in this pytest worker's thread would share the worker's heap with whatever the worker ran
    before (CI once saw 88 MB of "growth" that way). Large buffers are mmap'd, so a freed 10 MB
    body goes back to the OS at once instead of staying in glibc's arenas as noise."""
    port = free_port()
    env = {**ENV, "MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_ARENA_MAX": "2"}
    argv = [sys.executable, "-m", "mock_server", "--port", str(port), *ARGV]
    proc = start_session(argv, subprocess.DEVNULL, env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, url, within=MOCK_START_S)
        yield url, proc.pid
    finally:
        stop_session(proc.pid, leader=proc)


def rss_mb(pid: int) -> float:
    """Resident memory of process `pid`, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def send_all(url: str, items: list[tuple[str, bytes, bool]]) -> list[str]:
    """Every item once; returns the problems found (5xx, bad error shapes, failed valid)."""
    headers = {"Content-Type": "application/json"}

    client = httpx.Client(base_url=url, timeout=TIMEOUT)  # thread-safe; one pool for all

    def one(item: tuple[str, bytes, bool]) -> str | None:
        path, raw, valid = item
        r = client.post(path, content=raw, headers=headers)
        what = f"{path} {raw[:60]!r}: {r.status_code} {r.text[:200]}"
        if r.status_code >= 500:
            return what
        if valid and r.status_code != 200:
            return "valid request refused: " + what
        if r.status_code >= 400 and r.status_code != 413:
            body = r.json()  # every refusal is JSON...
            if not (isinstance(body, dict) and ("error" in body or "detail" in body)):
                return "error body of another shape: " + what  # ...in vLLM's shapes
        return None

    with client, ThreadPoolExecutor(WORKERS) as pool:
        return [p for p in pool.map(one, items) if p is not None]


def test_flood_of_malformed_bodies() -> None:
    items = flood()
    assert len(items) > 600
    with mock_process() as (url, pid):
        started = time.monotonic()
        problems = send_all(url, items)  # warm-up: caches, tables, arenas
        assert not problems, "\n".join(problems[:20])
        first = time.monotonic() - started
        before = rss_mb(pid)
        problems = send_all(url, items)
        after = rss_mb(pid)
        assert not problems, "\n".join(problems[:20])
        with httpx.Client(base_url=url, timeout=5) as client:
            assert client.get("/health").status_code == 200
            stats = client.get("/mock/stats").json()
    assert stats["in_flight"] == 0 and stats["queued"] == 0
    assert after - before < GROWTH_LIMIT_MB, f"RSS grew {after - before:.1f} MB in the 2nd flood"
    assert first < 30, f"one flood took {first:.1f} s"
