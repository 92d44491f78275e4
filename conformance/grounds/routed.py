"""The router's duties, probed: what a router in front of engines must pass through unchanged.

Behind a router (`--engine URL` per engine) a requirement's evidence passes through the router.
Each probe compares what an engine answers directly with what the same request gets through
the router; where they differ, the duty is broken and what stands on it is the router's doing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from conformance import api
from conformance.session import Session
from conformance.tito.semantics import choices_of
from conformance.wire import Client, is_event_stream


def key_passes(s: Session) -> str | None:
    """Behind a router: the client's key reaches the engines on every guarded path (a router
    that drops it locks the client out of aborts and renders: ROUTER-010's, not each check's)."""
    for url in s.features.engines[:1]:
        body: dict[str, list[str]] = {"request_ids": []}
        if (
            s.client.post(api.ABORT, body).status == 401
            and s.direct(url).post(api.ABORT, body).status != 401
        ):
            return f"{api.ABORT} with the API key is a 401 through the router, not at {url}"
    return None


def errors_pass(s: Session) -> str | None:
    """Behind a router: an engine's 400 reaches the client as the engine answered it (its
    status, a JSON body). A router that turns it into a 502 or plain text answers every
    rejection so (ROUTER-009's): what the client sees of errors is the router's, and each
    requirement about an error answer is blocked on it rather than failed."""
    for url in s.features.engines[:1]:
        for what, sent in REJECTED:
            direct = s.direct(url).post(api.GENERATE, **sent)
            if direct.status != 400:
                continue  # the engine does not reject it so: nothing to pass through
            routed = s.client.post(api.GENERATE, **sent)
            media = routed.headers.get("content-type") or ""
            if routed.status != direct.status or "json" not in media:
                return (
                    f"{what} is HTTP {direct.status} from the engine {url}, "
                    f"HTTP {routed.status} ({media or 'no content type'}) through the router"
                )
    return None


REJECTED: tuple[tuple[str, dict[str, Any]], ...] = (
    ("an invalid generate", {"body": api.invalid()}),
    ("a generate without token_ids", {"body": {"sampling_params": {"max_tokens": 1}}}),
    (
        "a generate sent as text/plain",
        {"content": api.dumps_body(api.body(1)), "headers": {"Content-Type": "text/plain"}},
    ),
)
"""Requests every engine rejects with a 400 (`Client.post` arguments): wrong values, a missing
field and a non-JSON Content-Type, the last two of which a router that parses bodies into its
own types rejects itself (vllm-router 0.1.17: a 422 and a 415, in plain text)."""


def labels_reach(s: Session) -> str | None:
    """Behind a router: a label set through it reaches every engine's /weight_info (one that
    sends it to one engine labels only that one's spans: ROUTER-011's, not each label
    requirement's). Put back on every engine after."""
    urls = list(s.features.engines)
    engines = [s.direct(url) for url in urls]

    def label(engine: Client) -> str:
        return str(engine.get("/weight_info", auth=False).json().get("weight_version"))

    if not engines:
        return None
    old = [label(e) for e in engines]
    new = f"tito-{s.session_id}-reach"
    try:
        reply = s.client.post("/update_weight_version", {"new_version": new}, auth=False)
        if reply.status != 200:
            return None  # not served through it: WV-007 judges that
        missed = [url for url, e in zip(urls, engines, strict=True) if label(e) != new]
    finally:
        for engine, was in zip(engines, old, strict=True):
            engine.post("/update_weight_version", {"new_version": was}, auth=False)
    if missed:
        return (
            f"/update_weight_version {new!r} through the router reached "
            f"{len(urls) - len(missed)} of {len(urls)} engines (not {', '.join(missed)})"
        )
    return None


def rank_passes(s: Session) -> str | None:
    """Behind a router: a rank no engine has (which the engine rejects with 400 when asked
    directly) is still a 400 through it; a router that drops the header answers it (ROUTER-005's,
    not each rank requirement's)."""
    rank = {"X-data-parallel-rank": "1000000"}
    for url in s.features.engines[:1]:
        if s.direct(url).post(api.GENERATE, api.body(1), headers=rank).status != 400:
            return None  # the engine takes it: nothing to pass on
        routed = s.client.post(api.GENERATE, api.body(1), headers=rank)
        if routed.status != 400:
            return f"X-data-parallel-rank 1000000: HTTP 400 from {url}, {routed.status} routed"
    return None


def ids_pass(s: Session) -> str | None:
    """Behind a router: an X-Request-Id comes back through it as the engine echoes it (a router
    that renames requests: ROUTER-006's, not each request-id requirement's)."""
    for url in s.features.engines[:1]:
        rid = s.rid("foundation-routed-id")
        answers = [
            client.post(api.GENERATE, api.body(1), headers={"X-Request-Id": rid})
            for client in (s.direct(url), s.client)
        ]
        if any(a.status != 200 for a in answers):
            return None
        direct, routed = (a.json().get("request_id") for a in answers)
        if direct != routed:
            return f"X-Request-Id {rid!r}: {direct!r} from {url}, {routed!r} through the router"
    return None


def echo_passes(s: Session) -> str | None:
    """Behind a router: the output_mode the engine echoes comes back through it (ROUTER-007's,
    not each echo requirement's)."""
    body = api.body(1, top={"output_mode": "tokens"})
    for url in s.features.engines[:1]:
        direct = s.direct(url).post(api.GENERATE, body)
        if direct.status != 200 or direct.json().get("output_mode") != "tokens":
            return None  # the engine echoes nothing to pass on
        routed = s.client.post(api.GENERATE, body)
        if routed.status == 200 and routed.json().get("output_mode") != "tokens":
            return f"output_mode 'tokens' is echoed by {url}, not through the router"
    return None


SPREAD_S = 0.3  # the least a routed stream must last for its pacing to be judged
BUFFERED = 0.25  # a routed stream whose first token comes in its last quarter is held
GROW = 8  # each longer try asks for this many times more tokens


@dataclass(frozen=True)
class Pacing:
    """A stream straight from an engine against the same through the router: `held` says how
    the router held it back, `unknown` why that cannot be told (None: neither)."""

    held: str | None = None
    unknown: str | None = None


def _timed(client: Client, body: dict[str, Any], deadline: float) -> tuple[float, float, int]:
    """A stream's first token chunk and its end, in seconds from sending, and its tokens."""
    started = time.monotonic()
    first: float | None = None
    tokens = 0
    with client.stream(api.GENERATE, {**body, "stream": True}, deadline=deadline) as st:
        if st.status != 200 or not is_event_stream(st.headers):
            raise AssertionError(f"a stream from {client.base_url} answered {st.status}")
        for data in st.events():
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            count = sum(len(c.get("token_ids") or []) for c in choices_of(chunk))
            tokens += count
            if first is None and count:
                first = time.monotonic() - started
    ended = time.monotonic() - started
    return (first if first is not None else ended), ended, tokens


def stream_pacing(s: Session) -> Pacing:
    """ROUTER-008's evidence (its check and its ground): a stream through the router, grown
    until it lasts SPREAD_S and four times the engine's own first token, is held back when
    its first token chunk comes only in the last quarter of it. (Judged on the routed stream
    alone: two engines, or one engine twice, differ in pace far more than a hop does.)"""

    def measure() -> Pacing:
        engine = s.direct(s.features.engines[0])
        deadline = s.config.stream_deadline
        direct_first, _, _ = _timed(engine, api.body(2, ignore_eos=True), deadline)
        room = s.limits.room(len(api.PROMPT)) or 4096
        tokens, first, end = 16, 0.0, 0.0
        while True:
            first, end, _ = _timed(s.client, api.body(tokens, ignore_eos=True), deadline)
            if (end >= SPREAD_S and end >= 4 * direct_first) or tokens >= room:
                break
            tokens = min(room, tokens * GROW)
        if end < SPREAD_S or end < 4 * direct_first:
            return Pacing(
                unknown=f"a stream of {tokens} tokens through the router lasts {end * 1000:.0f} "
                f"ms, too little beside the engine's first token ({direct_first * 1000:.0f} ms)"
            )
        if first >= (1 - BUFFERED) * end:
            return Pacing(
                held=f"a stream of {tokens} tokens reached the client through the router all "
                f"at once: its first token chunk at {first * 1000:.0f} ms, its end at "
                f"{end * 1000:.0f} ms (straight from {engine.base_url} the first token takes "
                f"{direct_first * 1000:.0f} ms)"
            )
        return Pacing()

    return s.remember("foundation-pacing", measure)


def stream_paced(s: Session) -> str | None:
    return stream_pacing(s).held if s.features.engines else None
