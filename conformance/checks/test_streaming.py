"""Streaming: framing, deltas, final chunks, usage and error events."""

from __future__ import annotations

from conformance import api
from conformance.grounds import broken, builds_on
from conformance.registry import checks
from conformance.requirements.model import MUST, SHOULD, Feature, Requirement, Source, fuzz
from conformance.session import Session
from conformance.tito.semantics import choices_of, fail, ids_of, over_max_logprobs, token_id_of
from conformance.tito.streamed import index_of

REQUIREMENTS = [
    Requirement(
        "STREAM-001",
        MUST,
        Feature.STREAMING,
        "SSE chunks ending with `data: [DONE]`.",
        "stream: true answers text/event-stream, one JSON chunk per event, each valid "
        "against GenerateStreamChunk",
        expected_status=200,
        needs=("generate",),
        fuzz=(
            fuzz(80, checks=("stream_well_framed",)),
            fuzz(120, operations=("generate",), stream=True),
        ),
        diff=("stream",),
    ),
    Requirement(
        "STREAM-002",
        MUST,
        Feature.STREAMING,
        "SSE chunks ending with `data: [DONE]`.",
        "the last event is data: [DONE]",
        needs=("generate",),
        fuzz=(fuzz(80, checks=("stream_well_framed",)),),
        diff=("stream",),
    ),
    Requirement(
        "STREAM-003",
        MUST,
        Feature.STREAMING,
        "Stream chunks carry the same per-choice fields for the new tokens.",
        "deltas (token_ids, logprobs) concatenate to the non-streamed result of a seeded request",
        needs=("generate",),
    ),
    Requirement(
        "STREAM-004",
        MUST,
        Feature.STREAMING,
        "A chunk is sent whenever the engine output carries new text or a finish_reason, even "
        "with no new token IDs.",
        "each choice's last chunk carries its finish_reason; no chunk is empty",
        needs=("generate",),
    ),
    Requirement(
        "STREAM-005",
        SHOULD,
        Feature.STREAMING,
        "finish_reason is null on every chunk of a choice but its last.",
        "no finish_reason before a choice's last chunk",
        source=Source.VLLM,
        evidence="vllm-source-notes §4; captures *.sse",
        needs=("generate",),
        fields=("finish_reason",),
    ),
    Requirement(
        "STREAM-006",
        SHOULD,
        Feature.STREAMING,
        "Each chunk carries exactly one choice; with n > 1 choices interleave by index.",
        "one choice per chunk",
        source=Source.VLLM,
        evidence="vllm-source-notes §4",
        needs=("generate",),
        diff=("stream-continuous-usage-n2", "stream-n2-logprobs-return-ids"),
        fields=("choices",),
    ),
    Requirement(
        "STREAM-007",
        SHOULD,
        Feature.STREAMING,
        "stream_options.include_usage adds one final chunk with choices [] and the usage, "
        "before [DONE].",
        "include_usage gives a usage chunk whose counts match the stream",
        source=Source.VLLM,
        evidence="vllm-source-notes §4; test_stream_include_usage",
        needs=("generate",),
        diff=("stream-include-usage", "stream-continuous-usage-n2"),
    ),
    Requirement(
        "STREAM-008",
        SHOULD,
        Feature.STREAMING,
        "An engine-side rejection of a streamed request (logprobs above the maximum, DP rank out "
        "of range) is a 200 with one error event, then data: [DONE].",
        "engine-side rejections of a stream arrive as an error event",
        source=Source.VLLM,
        expected_status=200,
        evidence="vllm-cpu.md 'More behaviour'; captures stream_error_*",
        needs=("generate",),
        diff=("stream-logprobs-21", "stream-dp-rank-5"),
    ),
    Requirement(
        "STREAM-009",
        SHOULD,
        Feature.STREAMING,
        "Schema errors (for example an empty token_ids) stay HTTP 400 with stream: true.",
        "schema errors of a streamed request are still a 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-cpu.md 'More behaviour'",
        needs=("generate",),
        diff=("stream-empty-token-ids",),
    ),
]


def seeded_pair(s: Session) -> tuple[dict, api.Streamed]:
    """The same seeded request (n=2, logprobs) once whole and once streamed."""

    def make() -> tuple[dict, api.Streamed]:
        payload = api.seeded(10, n=s.limits.n(2), logprobs=s.limits.logprobs(2))
        return api.generate(s, payload), api.stream(s, payload)

    return s.remember("seeded-pair", make)


def streamed(s: Session) -> api.Streamed:
    return seeded_pair(s)[1]


@checks("STREAM-001")
def test_stream_is_sse_of_valid_chunks(tito: Session) -> None:
    got = streamed(tito)
    if not got.chunks:
        fail("the stream carried no complete data event (events must end with a blank line)")


@checks("STREAM-002", builds_on=("STREAM-001",))
def test_stream_ends_with_done(tito: Session) -> None:
    got = streamed(tito)
    if not got.done:
        fail(f"the stream ended without data: [DONE] after {len(got.chunks)} chunks")
    if got.after_done:
        fail(f"{got.after_done} events came after data: [DONE]")


@checks("STREAM-003", builds_on=("STREAM-001", "GEN-REQ-007", "GEN-RESP-001", "GEN-RESP-003"))
def test_deltas_concatenate(tito: Session) -> None:
    whole, got = seeded_pair(tito)
    joined = got.choices()
    for choice in choices_of(whole):
        index = index_of(choice.get("index", 0))
        part = joined.get(index)
        if part is None:
            fail(f"choice {index} never appeared in the stream")
        assert part is not None
        whole_ids = ids_of(choice)
        if ids_of({"token_ids": part.token_ids}) != whole_ids:
            fail(
                f"choice {index}: streamed deltas join to {part.token_ids}, the non-streamed "
                f"result is {choice.get('token_ids')}{broke_off(got)}"
            )
        want = [token_id_of(e) for e in (choice.get("logprobs") or {}).get("content") or []]
        have = [token_id_of(e) for e in part.logprobs]
        if len(want) != len(whole_ids) or len(have) != len(whole_ids):
            builds_on(tito, "LOGP-002")  # one entry per token is LOGP-002's
        if want != have:
            fail(f"choice {index}: streamed logprob entries {have} != non-streamed {want}")


def broke_off(got: api.Streamed) -> str:
    """Why a stream fell short, when the server said so in an error event (vLLM 0.30/0.31's
    streamed n > 1 race: "list index out of range")."""
    if not got.errors:
        return ""
    error = got.errors[0].get("error", got.errors[0])
    said = error.get("message") if isinstance(error, dict) else error
    return f"; the stream broke off with an error event: {str(said)[:200]!r}"


@checks("STREAM-004", builds_on=("STREAM-001",))
def test_last_chunk_has_finish_reason(tito: Session) -> None:
    got = streamed(tito)
    for index, choice in got.choices().items():
        last = choice.chunks[-1]
        if last.get("finish_reason") is None:
            fail(f"choice {index}: its last chunk has no finish_reason{broke_off(got)}")
        for i, chunk in enumerate(choice.chunks):
            if (
                not chunk.get("token_ids")
                and not chunk.get("text")
                and (chunk.get("finish_reason") is None)
            ):
                fail(f"choice {index}: chunk {i} carries no tokens, text or finish_reason")


@checks("STREAM-005", builds_on=("STREAM-001",))
def test_finish_reason_only_last(tito: Session) -> None:
    for index, choice in streamed(tito).choices().items():
        early = [c.get("finish_reason") for c in choice.chunks[:-1] if c.get("finish_reason")]
        if early:
            fail(f"choice {index}: finish_reason {early[0]!r} before its last chunk")


@checks("STREAM-006", n=2, builds_on=("STREAM-001",))
def test_one_choice_per_chunk(tito: Session) -> None:
    for i, chunk in enumerate(streamed(tito).chunks):
        if "choices" in chunk and len(chunk["choices"]) > 1:
            fail(f"chunk {i} carries {len(chunk['choices'])} choices")


@checks("STREAM-007", builds_on=("STREAM-001", "STREAM-003"))
def test_include_usage(tito: Session) -> None:
    got = api.stream(
        tito, api.body(5, ignore_eos=True, top={"stream_options": {"include_usage": True}})
    )
    usage = got.usage_chunks()
    if len(usage) != 1:
        fail(f"include_usage gave {len(usage)} usage chunks (choices: [])")
    if got.chunks[-1] is not usage[0]:
        fail("the usage chunk is not the last chunk before [DONE]")
    tokens = sum(len(c.token_ids) for c in got.choices().values())
    u = usage[0]["usage"]
    expected = {
        "prompt_tokens": len(api.PROMPT),
        "completion_tokens": tokens,
        "total_tokens": len(api.PROMPT) + tokens,
    }
    if {k: u.get(k) for k in expected} != expected:
        fail(f"usage chunk {u} does not match the stream {expected}")


@checks("STREAM-008", builds_on=("STREAM-001", "LOGP-009"))
def test_engine_rejection_is_error_event(tito: Session) -> None:
    above = over_max_logprobs(tito)
    payload = api.body(2, logprobs=above) | {"stream": True}
    with tito.client.stream(api.GENERATE, payload) as st:
        if st.status != 200:
            fail(
                f"a streamed request with logprobs {above} (above the server's maximum) answered "
                f"HTTP {st.status}, not a 200 with an error event"
            )
        got = api.read_stream(st, s=tito)
    done = got.done or broken(tito, "STREAM-002") is not None  # no [DONE] at all: STREAM-002's
    if len(got.errors) != 1 or not done:
        fail(
            f"expected one error event then [DONE]; got {len(got.errors)} error events, "
            f"[DONE] {'seen' if got.done else 'missing'}"
        )
    error = got.errors[0].get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(code, int) and code != 400:  # its form is SCHEMA-STREAM-001's
        fail(f"the error event says code {code!r}; the same request unstreamed is a 400")


@checks("STREAM-009")
def test_schema_error_stays_400(tito: Session) -> None:
    api.rejected(tito, api.invalid() | {"stream": True}, what="streamed invalid request")
