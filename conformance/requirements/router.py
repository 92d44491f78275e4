"""What a router in front of several engines must preserve (issue 20).

The document speaks of one server. Behind a router, each of its sentences still holds for the
client, and the router is what can break it: an abort forwarded to the wrong engine, a stream
held back, an engine's 400 turned into a 502. Each duty below quotes the sentence it follows
from (`Source.DERIVED`: the text is the document's, the title is the router's duty) and is a
SHOULD unless that sentence is itself a MUST for every server. They apply only to a run that
knows its topology (`tito-conformance run --engine URL ...`: the `router` feature), and their
checks read the engines directly to tell the router's doing from an engine's.
"""

from __future__ import annotations

from conformance.requirements.model import MUST, SHOULD, Feature, Proof, Requirement, Source

F = Feature.ROUTER
ROUTED = ("router", "generate")

REQUIREMENTS = [
    Requirement(
        "ROUTER-001",
        MUST,
        F,
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
        F,
        "With --tokens-only, the same handler is also served at POST /abort_requests for "
        "existing deployments.",
        "an abort through the router's /abort_requests ends the request on its engine",
        source=Source.DERIVED,
        evidence="the legacy route is the same handler: it must reach the engine too",
        needs=(*ROUTED, "legacy-abort"),
        proofs=(Proof.STATEMENT, Proof.BOUND),
    ),
    Requirement(
        "ROUTER-003",
        SHOULD,
        F,
        "The response is empty and the abort finishes in the background.",
        "a client that hangs up on a stream through the router ends the engine's request",
        source=Source.DERIVED,
        evidence="vLLM aborts a request whose client disconnects; a router must pass the "
        "hang-up on, or the engine generates for no one",
        needs=(*ROUTED, "engine-state"),
        proofs=(Proof.ENGINE, Proof.BOUND),
    ),
    Requirement(
        "ROUTER-004",
        SHOULD,
        F,
        "The response is empty and the abort finishes in the background.",
        "a client that hangs up on a non-streamed request through the router ends the "
        "engine's request",
        source=Source.DERIVED,
        evidence="as ROUTER-003, for a request without stream: true",
        needs=(*ROUTED, "engine-state"),
        proofs=(Proof.ENGINE, Proof.BOUND),
    ),
    Requirement(
        "ROUTER-005",
        MUST,
        F,
        "A rank outside [0, data_parallel_size) is rejected.",
        "X-data-parallel-rank reaches the engine: a rank it rejects is still a 400 through "
        "the router",
        source=Source.DERIVED,
        evidence="the header pins a request to a rank; a router that drops it load-balances "
        "a request the engine would reject",
        needs=ROUTED,
        ground="rank-passes",
    ),
    Requirement(
        "ROUTER-006",
        SHOULD,
        F,
        "The request ID is the request_id the server returned: the X-Request-Id header or body "
        "request_id you sent, prefixed with generate-tokens-.",
        "the router passes the client's request id on (header and body), so the id the client "
        "aborts by is the engine's",
        source=Source.DERIVED,
        evidence="a router that renames requests leaves the client no id to abort by",
        needs=ROUTED,
        ground="ids-pass",
    ),
    Requirement(
        "ROUTER-007",
        SHOULD,
        F,
        "Every response and every stream chunk echoes output_mode.",
        "the router passes the engine's output_mode echo through, in bodies and chunks",
        source=Source.DERIVED,
        evidence="clients tell token-only from text answers by the echo",
        needs=ROUTED,
        ground="echo-passes",
    ),
    Requirement(
        "ROUTER-008",
        SHOULD,
        F,
        "A chunk is sent whenever the engine output carries new text or a finish_reason, even "
        "with no new token IDs.",
        "streams are not buffered: the first chunk reaches the client while the engine still "
        "generates",
        source=Source.DERIVED,
        evidence="a router that buffers a stream turns it into a slow non-streamed answer",
        needs=ROUTED,
        ground="stream-paced",
    ),
    Requirement(
        "ROUTER-009",
        MUST,
        F,
        "A missing request_ids returns a 400.",
        "an engine's error answer passes through unchanged: its status and vLLM's error body, "
        "never a 502 or plain text for an engine's 400",
        source=Source.DERIVED,
        evidence="the quoted 400 is the document's, for every server: a router that turns it "
        "into a 502 or plain text breaks it; clients branch on the status and read "
        "error.message",
        needs=ROUTED,
        ground="errors-pass",
    ),
    Requirement(
        "ROUTER-010",
        MUST,
        F,
        "It is registered wherever /inference/v1/generate is and requires the API key when "
        "--api-key is set, like /inference/v1/generate.",
        "through the router, every guarded path still requires the engines' API key, and "
        "lets the key through",
        source=Source.DERIVED,
        evidence="a router that sends its own key upstream opens the engines to anyone",
        needs=(*ROUTED, "api-key"),
        ground="key-passes",
    ),
    Requirement(
        "ROUTER-011",
        SHOULD,
        F,
        "The labels are the ones you set with /update_weight_version or "
        "/finish_weight_update, see Async Reinforcement Learning.",
        "a label set through the router labels the spans of whichever engine serves next",
        source=Source.DERIVED,
        evidence="RL trainers set the label once, through the router, for the whole fleet",
        needs=(*ROUTED, "weight-labels"),
        ground="labels-reach",
    ),
]
