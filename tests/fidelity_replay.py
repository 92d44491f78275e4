"""Replay a vLLM capture's request against the mock started like the captured server.

Each capture names the server it came from; `SERVERS` gives the mock the same flags (the
tiny model's vocabulary, context and batch size). Abort captures are replayed as abort flows:
the stream (or non-streamed request) is started, and after the first events (or a short
delay) the abort is sent on another connection, as the capture did.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, replace
from typing import Any

import httpx
from captures import FIXTURES, GENERATE, Exchange

from conformance.diff.structure import Answer, Request
from conformance.profiles import PROFILES

API_KEY = "sekret-test-key"
"""The key the `tokens-only+api-key` captures were taken with (their Authorization header)."""
MODEL = "tiny-qwen3"
"""The served model name of the captured server (`model` in its answers and in /v1/models)."""
COMMON = (
    "--served-model-name",
    MODEL,
    "--max-model-len",
    "512",
    "--max-num-seqs",
    "4",
    "--mock-vocab-size",
    "2048",
)
TIMING = ("--mock-itl-ms", "2")
"""Abort flows need a stream that lasts long enough to be aborted mid-way."""

SCALE_OUT = PROFILES["scale-out"].flags
TOKENS_ONLY = PROFILES["tokens-only"].flags
KEYED = replace(PROFILES["tokens-only-api-key"], api_key=API_KEY).flags

SERVERS: dict[str, tuple[str, ...]] = {
    "scale-out": (*SCALE_OUT, *COMMON),
    "tokens-only": (*TOKENS_ONLY, *COMMON),
    "no-flag": (*PROFILES["disabled"].flags, *COMMON),
    "tokens-only+api-key": (*KEYED, *COMMON),
    "scale-out timing": (*SCALE_OUT, *COMMON, *TIMING),
    "tokens-only timing": (*TOKENS_ONLY, *COMMON, *TIMING),
}
"""Capture server name -> the mock's flags (the registry's profile flags, the captured key)."""

ABORT_DEFAULT = "/inference/v1/abort_requests"
_DROPPED_HEADERS = {"content-length", "host", "accept-encoding", "connection", "user-agent"}


@dataclass(frozen=True)
class Replay:
    """How to replay one capture: on which server, and whether it is an abort flow."""

    server: str
    abort_path: str | None = None
    abort_after_events: int = 1
    request_body: Any = None


def replay_plan(exchange: Exchange) -> Replay:
    """Derive the server and the abort flow from the capture's own record."""
    name = exchange.name
    if name.startswith("tokonly-abort"):
        path = exchange.extra.get("abort_path") or ABORT_DEFAULT
        return Replay("tokens-only timing", path, _after_events(name))
    if exchange.extra.get("abort") is not None:
        path = exchange.extra.get("abort_path") or ABORT_DEFAULT
        return Replay("scale-out timing", path, _after_events(name))
    if name.startswith("abort_mid_stream_"):
        return Replay("scale-out timing", ABORT_DEFAULT, 1, _curl_request(exchange))
    if name.startswith("abort_target_"):
        return Replay("scale-out timing", ABORT_DEFAULT, 1)
    return Replay(exchange.server or "scale-out")


def _after_events(name: str) -> int:
    data = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return int(data.get("abort_after_events") or 1)


def _curl_request(exchange: Exchange) -> dict[str, Any]:
    """The curl runs kept only the SSE bytes: rebuild the request from what the stream shows.

    Request id from the chunks; the prompt and `ignore_eos` of the other abort runs; the
    `max_tokens` the starved run reached (it ran to the end).
    """
    first = json.loads(exchange.events[0]["data"]) if exchange.events else {}
    request_id = str(first.get("request_id", "curl")).removeprefix("generate-tokens-")
    return {
        "request_id": request_id,
        "token_ids": [321, 608, 78],
        "stream": True,
        "sampling_params": {"max_tokens": 500, "ignore_eos": True},
    }


def request_of(exchange: Exchange, plan: Replay) -> Request:
    body = plan.request_body if plan.request_body is not None else exchange.request_body
    return Request(
        exchange.method,
        exchange.path,
        body,
        dict(exchange.request_headers),
        timing_dependent=plan.abort_path is not None,
    )


def reference_answer(exchange: Exchange) -> Answer:
    """The captured answer as an `Answer` (events and raw SSE bytes when the capture has them)."""
    headers = {k.lower(): v for k, v in exchange.response_headers.items()}
    content_type = headers.get("content-type")
    # Timing runs and curl runs kept only the events; the loader fills in a bare media type.
    known = any(name != "content-type" for name in headers)
    if exchange.events is not None:
        return Answer(
            exchange.status,
            content_type or "text/event-stream",
            b"",
            tuple(exchange.events),
            _raw_sse(exchange),
            content_type_params_known=known,
        )
    if exchange.response_raw is not None:
        body = exchange.response_raw.encode("utf-8")
    elif exchange.response_body is not None:
        body = json.dumps(exchange.response_body).encode("utf-8")
    else:
        body = b""
    return Answer(exchange.status, content_type, body)


def _raw_sse(exchange: Exchange) -> bytes | None:
    path = FIXTURES / f"{exchange.name}.sse"
    if not path.exists():
        data_file = FIXTURES / f"{exchange.name}.json"
        if not data_file.exists():
            return None
        data = json.loads(data_file.read_text(encoding="utf-8"))
        sse_file = (
            (data.get("response") or {}).get("raw_sse_file") if isinstance(data, dict) else None
        )
        if not sse_file:
            return None
        path = FIXTURES / sse_file
    return path.read_bytes()


def _send_args(exchange: Exchange, body: Any) -> dict[str, Any]:
    headers = {
        k: v for k, v in exchange.request_headers.items() if k.lower() not in _DROPPED_HEADERS
    }
    if exchange.request_raw is not None:
        return {"headers": headers, "content": exchange.request_raw.encode("utf-8")}
    if body is None:
        return {"headers": headers}
    headers.setdefault("Content-Type", "application/json")
    return {"headers": headers, "content": json.dumps(body).encode("utf-8")}


def replay(base_url: str, exchange: Exchange, plan: Replay, timeout: float = 30.0) -> Answer:
    """Send the capture's request to `base_url` and return the mock's answer."""
    body = plan.request_body if plan.request_body is not None else exchange.request_body
    args = _send_args(exchange, body)
    with httpx.Client(base_url=base_url, timeout=timeout) as client:
        if plan.abort_path is None:
            response = client.request(exchange.method, exchange.path, **args)
            return Answer.from_response(response)
        return _abort_flow(client, base_url, exchange, plan, body, args)


def _abort_flow(
    client: httpx.Client,
    base_url: str,
    exchange: Exchange,
    plan: Replay,
    body: Any,
    args: dict[str, Any],
) -> Answer:
    assert plan.abort_path is not None and isinstance(body, dict)
    # The id to abort is the one the server returns: the request's id with vLLM's prefix.
    abort_body = {"request_ids": [f"generate-tokens-{body.get('request_id')}"]}
    auth = {k: v for k, v in args["headers"].items() if k.lower() == "authorization"}

    def abort() -> None:
        with httpx.Client(base_url=base_url, timeout=10) as other:
            other.post(plan.abort_path or ABORT_DEFAULT, json=abort_body, headers=auth)

    if not body.get("stream"):
        timer = threading.Timer(0.05, abort)
        timer.start()
        response = client.request(exchange.method, GENERATE, **args)
        timer.join()
        return Answer.from_response(response)
    raw = bytearray()
    aborter: threading.Thread | None = None
    with client.stream(exchange.method, GENERATE, **args) as response:
        for chunk in response.iter_raw():
            raw += chunk
            if aborter is None and raw.count(b"\n\n") >= plan.abort_after_events:
                aborter = threading.Thread(target=abort)
                aborter.start()
        status, content_type = response.status_code, response.headers.get("content-type")
    if aborter is not None:
        aborter.join()
    done = httpx.Response(status, headers={"content-type": content_type or ""}, content=bytes(raw))
    return Answer.from_response(done)
