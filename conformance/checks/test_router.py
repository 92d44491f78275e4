"""What a router must preserve between the client and its engines (`REQUIREMENTS` below).

These run only when the run knows its topology (`--engine URL` per engine): each sends through
the router (the server under test) and, where the duty is to pass something on unchanged, asks
an engine directly for the reference. The hang-up duties read every engine's state and run
with the other whole-server checks (`test_server_wide.py`).
"""

from __future__ import annotations

from typing import Any

from conformance import api
from conformance.checks.test_abort import aborted_stream, judge_abort_landed
from conformance.grounds.routed import REJECTED, stream_pacing
from conformance.inflight.attempts import Inconclusive
from conformance.registry import checks
from conformance.requirements.model import MUST, ROUTED, SHOULD, Feature, Proof, Requirement, Source
from conformance.server.dp_rank import HEADER as RANK_HEADER
from conformance.server.dp_rank import MAX_DP_PROBE, pinned, rejected
from conformance.session import Session
from conformance.tito.semantics import fail
from conformance.wire import Client, Reply

REQUIREMENTS = [
    Requirement(
        "ROUTER-001",
        MUST,
        Feature.ROUTER,
        "POST /inference/v1/abort_requests aborts in-flight requests.",
        "an abort through the router ends the request on the engine that runs it",
        source=Source.DERIVED,
        evidence="a router serving the route must reach the engine that runs the request; "
        "vllm-router 0.1.17 forwards it round-robin to one engine (routers.md)",
        needs=(*ROUTED, "abort"),
        proofs=(Proof.STATEMENT, Proof.BOUND),
    ),
    Requirement(
        "ROUTER-002",
        MUST,
        Feature.ROUTER,
        "With --tokens-only, the same handler is also served at POST /abort_requests for "
        "existing deployments.",
        "an abort through the router's /abort_requests ends the request on its engine",
        source=Source.DERIVED,
        evidence="the legacy route is the same handler: it must reach the engine too",
        needs=(*ROUTED, "legacy-abort"),
        proofs=(Proof.STATEMENT, Proof.BOUND),
    ),
    Requirement(
        "ROUTER-005",
        MUST,
        Feature.ROUTER,
        "A rank outside [0, data_parallel_size) is rejected.",
        "X-data-parallel-rank reaches the engine: a rank it rejects is still a 400 through "
        "the router",
        source=Source.DERIVED,
        evidence="the header pins a request to a rank; a router that drops it load-balances "
        "a request the engine would reject",
        needs=ROUTED,
    ),
    Requirement(
        "ROUTER-006",
        SHOULD,
        Feature.ROUTER,
        "The request ID is the request_id the server returned: the X-Request-Id header or body "
        "request_id you sent, prefixed with generate-tokens-.",
        "the router passes the client's request id on (header and body), so the id the client "
        "aborts by is the engine's",
        source=Source.DERIVED,
        evidence="a router that renames requests leaves the client no id to abort by",
        needs=ROUTED,
    ),
    Requirement(
        "ROUTER-007",
        SHOULD,
        Feature.ROUTER,
        "Every response and every stream chunk echoes output_mode.",
        "the router passes the engine's output_mode echo through, in bodies and chunks",
        source=Source.DERIVED,
        evidence="clients tell token-only from text answers by the echo",
        needs=ROUTED,
    ),
    Requirement(
        "ROUTER-008",
        SHOULD,
        Feature.ROUTER,
        "A chunk is sent whenever the engine output carries new text or a finish_reason, even "
        "with no new token IDs.",
        "streams are not buffered: the first chunk reaches the client while the engine still "
        "generates",
        source=Source.DERIVED,
        evidence="a router that buffers a stream turns it into a slow non-streamed answer",
        needs=ROUTED,
    ),
    Requirement(
        "ROUTER-009",
        MUST,
        Feature.ROUTER,
        "A missing request_ids returns a 400.",
        "an engine's error answer passes through unchanged: its status and vLLM's error body, "
        "never a 502 or plain text for an engine's 400",
        source=Source.DERIVED,
        evidence="the quoted 400 is the document's, for every server: a router that turns it "
        "into a 502 or plain text breaks it; clients branch on the status and read "
        "error.message",
        needs=ROUTED,
    ),
    Requirement(
        "ROUTER-010",
        MUST,
        Feature.ROUTER,
        "It is registered wherever /inference/v1/generate is and requires the API key when "
        "--api-key is set, like /inference/v1/generate.",
        "through the router, every guarded path still requires the engines' API key, and "
        "lets the key through",
        source=Source.DERIVED,
        evidence="a router that sends its own key upstream opens the engines to anyone",
        needs=(*ROUTED, "api-key"),
    ),
]
"""What a router in front of several engines must preserve (issue 20).

The document speaks of one server. Behind a router, each of its sentences still holds for the
client, and the router is what can break it: an abort forwarded to the wrong engine, a stream
held back, an engine's 400 turned into a 502. Each duty below quotes the sentence it follows
from (`Source.DERIVED`: the text is the document's, the title is the router's duty) and is a
SHOULD unless that sentence is itself a MUST for every server. They apply only to a run that
knows its topology (`tito-conformance run --engine URL ...`: the `router` feature), and their
checks read the engines directly to tell the router's doing from an engine's.
"""


def _engines(s: Session) -> list[Client]:
    return [s.direct(url) for url in s.features.engines]


def _rounds(s: Session) -> int:
    """Enough requests that a round-robin router sends one to every engine."""
    return max(2, len(s.features.engines))


def _aborts_land(s: Session, path: str, auth: bool, what: str) -> None:
    for number in range(_rounds(s)):
        line, outcome = aborted_stream(s, path, auth=auth)
        judge_abort_landed(s, line, outcome, f"{what} (stream {number + 1} of {_rounds(s)})")


@checks("ROUTER-001", builds_on=("ABORT-001", "STREAM-001"))
def test_abort_reaches_its_engine(tito: Session) -> None:
    _aborts_land(tito, api.ABORT, True, f"a stream aborted through the router's {api.ABORT}")


@checks("ROUTER-002", builds_on=("STREAM-001",))
def test_legacy_abort_reaches_its_engine(tito: Session) -> None:
    what = f"a stream aborted through the router's {api.LEGACY_ABORT}"
    _aborts_land(tito, api.LEGACY_ABORT, False, what)


def _rejected_rank(engine: Client) -> int | None:
    """The smallest rank the engine itself rejects (None: it takes every rank probed, or
    answered one neither 200 nor 400)."""
    asked = (
        engine.post(api.GENERATE, api.body(1), headers=pinned(r))
        for r in range(1, MAX_DP_PROBE + 1)
    )
    return rejected(asked, first=1)


@checks("ROUTER-005")
def test_rank_reaches_the_engine(tito: Session) -> None:
    engine = _engines(tito)[0]
    rank = _rejected_rank(engine)
    if rank is None:
        raise Inconclusive(f"{engine.base_url} rejects no rank up to {MAX_DP_PROBE} with a 400")
    routed = tito.client.post(api.GENERATE, api.body(1), headers=pinned(rank))
    if routed.status != 400:
        fail(
            f"{RANK_HEADER}: {rank}, which the engine rejects with 400 ({engine.base_url}), was "
            f"answered {api.answer_of(routed)} through the router: the header did not reach it"
        )
    zero = tito.client.post(api.GENERATE, api.body(1), headers=pinned(0))
    api.status_is(zero, 200, f"{RANK_HEADER}: 0 through the router")


def _echoed_id(reply: Reply, what: str) -> str:
    api.status_is(reply, 200, what)
    data = reply.json()
    rid = data.get("request_id") if isinstance(data, dict) else None
    return rid if isinstance(rid, str) else f"{rid!r}"


def _sent_id(client: Client, where: str, rid: str) -> str:
    """The request_id a generate comes back with when `rid` is sent in the header or body."""
    headers = {"X-Request-Id": rid} if where == "header" else None
    top = {"request_id": rid} if where == "body" else {}
    reply = client.post(api.GENERATE, api.body(1, top=top), headers=headers)
    return _echoed_id(reply, f"a generate with a {where} request id ({client.base_url})")


@checks("ROUTER-006", needs=("generate",))
def test_request_ids_pass(tito: Session) -> None:
    engine = _engines(tito)[0]
    for where in ("header", "body"):
        mine, theirs = tito.rid(f"router-{where}"), tito.rid(f"engine-{where}")
        expected = _sent_id(engine, where, theirs).replace(theirs, mine)
        routed = _sent_id(tito.client, where, mine)
        if routed != expected:
            fail(
                f"a {where} request id {mine!r} came back through the router as {routed!r}; "
                f"the engine itself answers {expected!r} for it"
            )


@checks("ROUTER-007")
def test_echo_passes(tito: Session) -> None:
    """Asked of the engine first: the router passes on what the engine echoes (the echo is
    not detected through the router, where its loss would hide it)."""
    engine = _engines(tito)[0]
    modes = []
    for mode in ("tokens", "text"):
        direct = engine.post(api.GENERATE, api.body(2, top={"output_mode": mode}))
        if direct.status == 200 and direct.json().get("output_mode") == mode:
            modes.append(mode)
    if not modes:
        raise Inconclusive(f"{engine.base_url} echoes no output_mode: nothing to pass on")
    for mode in modes:
        body = api.body(2, top={"output_mode": mode})
        data = api.generate(tito, body, what=f"output_mode {mode!r} through the router")
        if data.get("output_mode") != mode:
            fail(f"output_mode {mode!r} came back as {data.get('output_mode')!r}")
        streamed = api.stream(tito, body, what=f"a {mode}-mode stream through the router")
        for number, chunk in enumerate(streamed.chunks):
            if "error" not in chunk and chunk.get("output_mode") != mode:
                fail(f"chunk {number} of a {mode}-mode stream echoes {chunk.get('output_mode')!r}")


@checks("ROUTER-008", builds_on=("STREAM-001",))
def test_stream_not_buffered(tito: Session) -> None:
    paced = stream_pacing(tito)
    if paced.held:
        fail(paced.held)
    if paced.unknown:
        raise Inconclusive(paced.unknown)


def _error_of(reply: Reply) -> tuple[int, str | None, Any]:
    try:
        body: Any = reply.json()
    except AssertionError:
        body = reply.body[:200]
    return reply.status, reply.headers.get("content-type"), body


@checks("ROUTER-009", needs=("generate",))
def test_errors_pass_unchanged(tito: Session) -> None:
    engine = _engines(tito)[0]
    cases = [
        *((what, api.GENERATE, sent) for what, sent in REJECTED),
        ("an abort without request_ids", api.ABORT, {"body": {}}),
    ]
    for what, path, sent in cases:
        direct = engine.post(path, **sent)
        if direct.status < 400:
            continue  # the engine accepts it: nothing to pass through
        routed = tito.client.post(path, **sent)
        want, got = _error_of(direct), _error_of(routed)
        if (got[0], got[2]) != (want[0], want[2]) or "json" not in (got[1] or ""):
            fail(
                f"{what}: the engine answers HTTP {want[0]} ({want[1]}) {want[2]!r:.200}; "
                f"through the router HTTP {got[0]} ({got[1]}) {got[2]!r:.200}"
            )


@checks("ROUTER-010")
def test_key_still_required(tito: Session) -> None:
    """Both ways: without the key a guarded path is a 401 through the router as it is on the
    engine, and with it, it is not (a router that drops the header on some routes locks the
    client out of them)."""
    engine = _engines(tito)[0]
    guarded = [(api.GENERATE, api.body(1)), (api.ABORT, {"request_ids": []})]
    for path, body in guarded:
        if engine.post(path, body, auth=False).status != 401:
            continue  # the engine itself does not guard it
        routed = tito.client.post(path, body, auth=False)
        if routed.status != 401:
            fail(
                f"{path} without the API key: the engine answers 401, the router "
                f"{api.answer_of(routed)}"
            )
        keyed = tito.client.post(path, body)
        if keyed.status == 401 and engine.post(path, body).status != 401:
            fail(
                f"{path} with the API key: the engine lets it in, the router answers "
                f"{api.answer_of(keyed)}: the key did not reach the engine"
            )
