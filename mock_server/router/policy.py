"""The router's duties as data, and the named defects that each break exactly one of them.

The proxy (`app.py`) reads one `Policy` and never asks which defect is on: `CORRECT` is what a
router in front of TITO engines must do, and each defect is `CORRECT` with one field replaced.
A conformance check that passes through the correct router and fails through a defect's proves
it catches that router bug (the first, `abort-one-engine`, is what vllm-router 0.1.17 does).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mock_server.endpoints import mock_stats

Headers = list[tuple[bytes, bytes]]

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"
LEGACY_ABORT = "/abort_requests"
UPDATE_WEIGHTS = "/update_weight_version"
FINISH_WEIGHTS = "/finish_weight_update"
BROADCAST = frozenset({ABORT, LEGACY_ABORT, UPDATE_WEIGHTS, FINISH_WEIGHTS})
"""POSTs every engine must see: an abort must reach the engine that runs the request, and a
weight label applies fleet-wide."""
FIRST_ENGINE = frozenset({"/weight_info", mock_stats.PATH, "/metrics"})
"""GETs answered by the first engine, so they leave the round-robin counter alone."""


@dataclass
class Outgoing:
    """A request on its way to the engines: headers (hop-by-hop ones removed) and body bytes."""

    headers: Headers
    body: bytes
    engine_api_key: str | None = None
    path: str = ""


RequestRewrite = Callable[[Outgoing], None]
EventRewrite = Callable[[dict[str, Any]], dict[str, Any]]
"""Rewrites a generate answer's JSON object (a whole body, or one stream event)."""
ErrorRewrite = Callable[[int, Headers, bytes], tuple[int, Headers, bytes]]
"""Rewrites an engine's 4xx answer: (status, headers, body) in and out."""


@dataclass(frozen=True)
class Policy:
    """How the router forwards; the defaults are the correct router's."""

    broadcast: frozenset[str] = BROADCAST
    kept_on_disconnect: frozenset[str] = frozenset()  # "stream", "unary": left running
    buffered_streams: bool = False
    request: RequestRewrite | None = None
    event: EventRewrite | None = None
    error: ErrorRewrite | None = None


CORRECT = Policy()


# -- the rewrites the defects plug in ----------------------------------------------------------
def _without(headers: Headers, name: bytes) -> Headers:
    return [(k, v) for k, v in headers if k.lower() != name]


def _drop_dp_rank(out: Outgoing) -> None:
    out.headers = _without(out.headers, b"x-data-parallel-rank")


def _rewrite_request_id(out: Outgoing) -> None:
    own = f"router-{secrets.token_hex(8)}"
    if any(k.lower() == b"x-request-id" for k, _ in out.headers):
        out.headers = [*_without(out.headers, b"x-request-id"), (b"x-request-id", own.encode())]
    body = _json_object(out.body)
    if body is not None and "request_id" in body:
        body["request_id"] = own
        out.body = json.dumps(body, ensure_ascii=False).encode()


def _bypass_key(out: Outgoing) -> None:
    out.headers = _without(out.headers, b"authorization")
    if out.engine_api_key:
        out.headers.append((b"authorization", f"Bearer {out.engine_api_key}".encode()))


def _key_on_generate_only(out: Outgoing) -> None:
    if out.path != GENERATE:
        out.headers = _without(out.headers, b"authorization")


def _drop_echo(body: dict[str, Any]) -> dict[str, Any]:
    body.pop("output_mode", None)
    return body


def _as_502(status: int, headers: Headers, body: bytes) -> tuple[int, Headers, bytes]:
    return 502, headers, body


def _plain_error(status: int, headers: Headers, body: bytes) -> tuple[int, Headers, bytes]:
    parsed = _json_object(body)
    error = parsed.get("error") if parsed is not None else None
    message: Any = error.get("message") if isinstance(error, dict) else error
    text = str(message if message is not None else body.decode("utf-8", "replace"))
    plain = [*_without(headers, b"content-type"), (b"content-type", b"text/plain; charset=utf-8")]
    return status, plain, text.encode()


def _json_object(raw: bytes) -> dict[str, Any] | None:
    """`raw` as a JSON object, or None for anything else (never raises)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


# -- the catalogue -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RouterDefect:
    name: str
    breaks: str  # the duty it breaks, as a sentence
    changes: Mapping[str, Any] = field(default_factory=dict)  # Policy fields replaced
    requirements: tuple[str, ...] = ()  # the suite's router duties it must fail


ROUTER_DEFECTS: dict[str, RouterDefect] = {
    d.name: d
    for d in (
        RouterDefect(
            "abort-one-engine",
            "/inference/v1/abort_requests goes to one engine, round-robin (vllm-router 0.1.17)",
            {"broadcast": BROADCAST - {ABORT}},
            ("ROUTER-001",),
        ),
        RouterDefect(
            "legacy-abort-one-engine",
            "legacy /abort_requests goes to one engine, round-robin",
            {"broadcast": BROADCAST - {LEGACY_ABORT}},
            ("ROUTER-002",),
        ),
        RouterDefect(
            "disconnect-kept-stream",
            "a client that leaves a stream: the router reads the engine's stream to its end",
            {"kept_on_disconnect": frozenset({"stream"})},
            ("ROUTER-003",),
        ),
        RouterDefect(
            "disconnect-kept-unary",
            "a client that leaves a non-streamed request: the engine's request runs to its end",
            {"kept_on_disconnect": frozenset({"unary"})},
            ("ROUTER-004",),
        ),
        RouterDefect(
            "dp-rank-dropped",
            "X-data-parallel-rank is not forwarded",
            {"request": _drop_dp_rank},
            ("ROUTER-005",),
        ),
        RouterDefect(
            "request-id-rewritten",
            "the client's X-Request-Id and body request_id are replaced by the router's own id",
            {"request": _rewrite_request_id},
            ("ROUTER-006",),
        ),
        RouterDefect(
            "echo-dropped",
            "output_mode is removed from generate answers (bodies and stream chunks)",
            {"event": _drop_echo},
            ("ROUTER-007",),
        ),
        RouterDefect(
            "stream-buffered",
            "a stream is read to its end before any of it is sent",
            {"buffered_streams": True},
            ("ROUTER-008",),
        ),
        RouterDefect(
            "error-502",
            "an engine's 4xx answer becomes a 502 with the same body",
            {"error": _as_502},
            ("ROUTER-009",),
        ),
        RouterDefect(
            "error-body-plain",
            "an engine's 4xx answer keeps its status, its body becomes the message as text/plain",
            {"error": _plain_error},
            ("ROUTER-009",),
        ),
        RouterDefect(
            "key-bypassed",
            "the client's Authorization is replaced by the router's engine key (--engine-api-key)",
            {"request": _bypass_key},
            ("ROUTER-010",),
        ),
        RouterDefect(
            "key-dropped",
            "the client's Authorization reaches the engine on generate only (vllm-router 0.1.17)",
            {"request": _key_on_generate_only},
            ("ROUTER-010",),
        ),
        RouterDefect(
            "weight-update-one-engine",
            "/update_weight_version goes to one engine, round-robin",
            {"broadcast": BROADCAST - {UPDATE_WEIGHTS}},
            ("ROUTER-011",),
        ),
    )
}


def policy_for(defect: str | None) -> Policy:
    """The correct router's policy with `defect`'s changes (KeyError for an unknown name)."""
    if defect is None:
        return CORRECT
    if defect not in ROUTER_DEFECTS:
        raise KeyError(f"unknown router defect {defect!r}; known: {', '.join(ROUTER_DEFECTS)}")
    return replace(CORRECT, **ROUTER_DEFECTS[defect].changes)


def requirement_pairs() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(defect name, requirement IDs) per router defect, for the suite's coverage matrix (the
    defects entry point of `tito_conformance`: the suite never imports the mock)."""
    return tuple((d.name, d.requirements) for d in ROUTER_DEFECTS.values())


def catalogue_text() -> str:
    width = max(len(name) for name in ROUTER_DEFECTS)
    return "\n".join(f"{d.name:<{width}}  {d.breaks}" for d in ROUTER_DEFECTS.values())
