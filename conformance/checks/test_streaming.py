"""Streaming: framing, deltas, final chunks, usage and error events."""

from __future__ import annotations

from conformance import api
from conformance.grounds import broken, builds_on
from conformance.registry import checks
from conformance.session import Session
from conformance.tito.semantics import choices_of, fail, ids_of, over_max_logprobs, token_id_of
from conformance.tito.streamed import index_of


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
