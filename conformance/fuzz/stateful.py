"""Sequences whose later step depends on an earlier answer; each step is judged by the same
checks as single cases. Generated parts come from schemathesis's positive strategies."""

from __future__ import annotations

import copy
from typing import Any, cast

from hypothesis import strategies as st
from schemathesis import GenerationMode

from conformance.fuzz.abort_stream import Outcome, stream_then_abort
from conformance.fuzz.engine import Fuzzer, ServerGone
from conformance.fuzz.oracles import RawBody, framing_problem, stream_payloads
from conformance.inflight.plans import Plan, plans_for, stream_deadline
from conformance.inflight.proof import bound_proof
from conformance.inflight.timeline import completed_in, ids_for
from conformance.tito.outputs import lean
from conformance.verdicts.reproducer import Evidence

GROUP = "stateful"


def _generate_strategy(fz: Fuzzer) -> st.SearchStrategy[Any]:
    op = fz.schema["/inference/v1/generate"]["POST"]
    return op.as_strategy(generation_mode=GenerationMode.POSITIVE).map(
        lambda case: _non_stream(fz.prepare("generate", case, positive=True))
    )


def _non_stream(case: Any) -> Any:
    case.body["stream"] = False
    return case


def _send(fz: Fuzzer, op_id: str, case: Any, index: int) -> Any | None:
    try:
        response = fz.call(case)
    except ServerGone:
        raise
    except Exception as exc:
        fz.transport_error(op_id, GROUP, case, exc, index)
        return None
    fz.judge(op_id, GROUP, case, response, index)
    return response


def _fail(
    fz: Fuzzer,
    op_id: str,
    case: Any,
    check: str,
    status: int,
    message: str,
    index: int,
    requirement: str,
    *,
    reproducer: str = "",
) -> None:
    """Record a finding; its reproducer is the case's curl, or (`reproducer`) the script of
    what was done to it in flight."""
    fz.record(
        op_id,
        case.operation.label,
        GROUP,
        check,
        status,
        message,
        reproducer or case.as_curl_command(headers=fz.headers),
        index,
    )
    fz.findings[(op_id, GROUP, check, status)].requirement_ids = (requirement,)


def in_flight_plans(fz: Fuzzer, case: Any) -> list[Plan]:
    """The stream's shape, then the retries': the suite's attempts (`plans_for`: about a second
    of generation at the learned pace, then longer, never past the context; where the context
    is too small, every sequence the server allows), so the abort lands in flight on a fast
    server with a small context as on a slow one. Never queued behind other requests: an
    abort that lands on a queued request proves nothing about one that runs."""
    ids = case.body.get("token_ids") if isinstance(case.body, dict) else None
    return plans_for(fz.facts.limits, len(ids) if isinstance(ids, list) else 0, queue=False)


def _stream_body(case: Any, plan: Plan) -> dict[str, Any]:
    """A positive draw turned into a long stream that only an abort can end early, held as
    long as `plan` says."""
    body = copy.deepcopy(case.body)
    body["stream"] = True
    sp = body.setdefault("sampling_params", {})
    sp["max_tokens"] = plan.max_tokens
    sp.update(plan.sampling())
    for key in ("stop", "stop_token_ids", "min_tokens"):
        sp.pop(key, None)
    return cast(dict[str, Any], body)


def _ends(stream: bytes) -> dict[int, tuple[Any, int]]:
    """choice index -> (its last finish_reason, how many tokens it streamed)."""
    ends: dict[int, tuple[Any, int]] = {}
    for chunk in stream_payloads(RawBody(stream)):
        for choice in chunk.get("choices", []) if isinstance(chunk, dict) else []:
            index = choice.get("index", 0)
            _, count = ends.get(index, (None, 0))
            ends[index] = (choice.get("finish_reason"), count + len(choice.get("token_ids") or []))
    return ends


def _fastest(fz: Fuzzer, body: dict[str, Any], headers: dict[str, str], plan: Plan) -> float | None:
    """The fastest the server completed this stream's request non-streamed (`proof.BOUND`)."""
    whole = {**body, "stream": False}
    whole.pop("stream_options", None)

    def sample() -> float | None:
        return completed_in(fz.client, whole, plan, headers=headers, auth=False)

    return fz.fastest.of(plan, sample)


def _not_stopped(out: Outcome, tokens: int, fastest_s: float | None) -> str | None:
    """Why the stream ignored its abort, or None when nothing shows it did: the suite's one
    proof obligation (`proof.ENGINE`: the engines still held it after the abort was answered;
    `proof.BOUND`: the abort, sent after the first token, was answered before the fastest
    completion of the same request could have ended it). Never the client's own reading pace:
    a fast server's stream read by a busy client ends late on its own."""
    actions = []
    if out.abort_sent_s is not None and out.abort_answered_s is not None:
        actions.append((out.abort_sent_s, out.abort_answered_s))
    proof = out.held or bound_proof(actions, out.abort_sent_s, fastest_s)
    if proof is None:
        return None
    return (
        f"the stream ran to its max_tokens {tokens} although it was aborted after its first "
        f"chunk: the abort did not stop it (abort sent at {out.abort_sent_s} s, answered "
        f"{out.abort_status} at {out.abort_answered_s} s, stream ended at {out.ended_s} s); "
        f"{proof}"
    )


def generate_then_abort(fz: Fuzzer, examples: int) -> None:
    """ABORT-002/006: abort a live stream by its returned id after its first chunk; it ends with
    finish_reason abort, then [DONE]. A choice that streamed all its tokens was too late to
    abort, not broken: retried with ever longer generations before it counts."""
    abort = fz.schema["/inference/v1/abort_requests"]["POST"]
    generate = fz.schema["/inference/v1/generate"]["POST"]
    cfg = fz.config

    def on_case(case: Any, index: int) -> None:
        headers = {**fz.headers, **{k: str(v) for k, v in (case.headers or {}).items()}}
        tries = in_flight_plans(fz, case)
        for plan in tries:
            tokens = plan.max_tokens
            body = _stream_body(case, plan)
            sent = generate.Case(  # what the reproducer shows: the stream as sent
                body=body, headers=dict(case.headers or {}), media_type="application/json"
            )
            out = stream_then_abort(
                body,
                headers,
                {**fz.headers, **fz.auth},
                client=fz.client,
                deadline_s=stream_deadline(fz.facts.limits, tokens, cfg.timeouts.stream),
                witness=lambda request_id: fz.state.holds(ids_for(request_id)),
            )
            step = abort.Case(
                body={"request_ids": [out.request_id]},
                headers=dict(fz.auth),
                media_type="application/json",
            )

            def not_aborted(
                status: int, message: str, sent: Any = sent, out: Outcome = out, seen: str = ""
            ) -> None:
                what = f"a fuzzed stream aborted after its first chunk: {message[:160]}"
                script = out.script(what, seen)
                _fail(
                    fz,
                    "generate",
                    sent,
                    "abort_in_flight",
                    status,
                    message,
                    index,
                    "ABORT-002",
                    reproducer=script,
                )

            if out.error and out.status == 200:  # the client's read broke (a busy client's
                return  # socket error is no statement of the server's: `proof`)
            if out.error or out.status != 200:
                if out.error:
                    not_aborted(out.status, out.error)
                return
            if out.abort_status is not None and (out.abort_status != 200 or out.abort_body):
                _fail(
                    fz,
                    "abortRequests",
                    step,
                    "abort_by_returned_id",
                    out.abort_status,
                    f"aborting the live {out.request_id!r} answered {out.abort_status} "
                    f"{out.abort_body[:200]!r}, not 200 with an empty body",
                    index,
                    "ABORT-006",
                )
                if out.abort_status != 200:  # not taken: nothing to judge ABORT-002 by, and
                    return  # longer streams would only wait for a route that is not there
            problem = framing_problem(out.stream)
            if problem:
                not_aborted(200, f"after the abort: {problem}")
                return
            ends = _ends(out.stream)
            late = [i for i, (reason, n) in ends.items() if reason != "abort" and n >= tokens]
            broken = {i: e for i, e in ends.items() if e[0] != "abort" and e[1] < tokens}
            if broken:
                not_aborted(
                    200,
                    f"aborted {out.request_id!r} after its first chunk, but choices "
                    f"(index: (finish_reason, tokens)) {broken} of max_tokens {tokens} did not "
                    "end with finish_reason abort",
                )
                return
            if not late:
                return
            fastest = None if out.held else _fastest(fz, body, headers, plan)
            ignored = _not_stopped(out, tokens, fastest)
            if ignored is not None:
                seen = Evidence("stream", "choices[0].finish_reason", ends[late[0]][0])
                not_aborted(200, ignored, seen=str(seen))
                return

    fz.run_group(
        "generate-then-abort", GROUP, _generate_strategy(fz), examples, on_case, side_by_side=True
    )


def label_then_generate(fz: Fuzzer, examples: int) -> None:
    update = fz.schema["/update_weight_version"]["POST"]
    strategy = st.tuples(st.text(min_size=1, max_size=12), _generate_strategy(fz))

    def on_case(drawn: Any, index: int) -> None:
        label, case = drawn
        step = update.Case(body={"new_version": label}, media_type="application/json")
        answer = _send(fz, "updateWeightVersion", step, index)
        if answer is None or answer.status_code != 200:
            return
        response = _send(fz, "generate", case, index)
        if response is None or response.status_code != 200:
            return
        for choice in response.json().get("choices", []):
            spans = choice.get("weight_versions") or []
            labels = {s.get("version") for s in spans}
            if choice.get("token_ids") and labels != {label}:
                _fail(
                    fz,
                    "generate",
                    case,
                    "weight_label_spans",
                    200,
                    f"after /update_weight_version {label!r} the spans carry {labels}",
                    index,
                    "WV-007",
                )
            end = spans[-1].get("end") if spans else 0
            if end != len(choice.get("token_ids", [])):
                _fail(
                    fz,
                    "generate",
                    case,
                    "weight_span_cover",
                    200,
                    f"spans {spans} do not cover {len(choice['token_ids'])} tokens",
                    index,
                    "WV-002",
                )

    fz.run_group("label-then-generate", GROUP, strategy, examples, on_case)


def render_generate_derender(fz: Fuzzer, examples: int) -> None:
    render = fz.schema["/v1/completions/render"]["POST"]
    generate = fz.schema["/inference/v1/generate"]["POST"]
    derender = fz.schema["/v1/completions/derender"]["POST"]
    strategy = render.as_strategy(generation_mode=GenerationMode.POSITIVE).map(
        lambda case: fz.prepare("renderCompletions", case, positive=True)
    )

    def on_case(case: Any, index: int) -> None:
        rendered = _send(fz, "renderCompletions", case, index)
        if rendered is None or rendered.status_code != 200:
            return
        responses = []
        for request in rendered.json():
            request = lean(request, fz.facts.limits.bytes_per_token)  # no 1 MB/token answers
            step = generate.Case(body=request, headers=dict(fz.auth), media_type="application/json")
            answer = _send(fz, "generate", step, index)
            if answer is None or answer.status_code != 200:
                _fail(
                    fz,
                    "generate",
                    step,
                    "render_output_generates",
                    getattr(answer, "status_code", 0),
                    "a render result did not generate unchanged",
                    index,
                    "RENDER-002",
                )
                return
            responses.append(answer.json())
        step = derender.Case(
            body={"generate_responses": responses},
            headers=dict(fz.auth),
            media_type="application/json",
        )
        answer = _send(fz, "derenderCompletions", step, index)
        if answer is None or answer.status_code != 200:
            return
        ids = [c.get("id") for c in [answer.json()]]
        if ids != [responses[0].get("request_id")]:
            _fail(
                fz,
                "derenderCompletions",
                step,
                "derender_keeps_id",
                200,
                f"derender id {ids} is not the generate request_id",
                index,
                "RENDER-002",
            )

    fz.run_group("render-generate-derender", GROUP, strategy, examples, on_case, side_by_side=True)


def run_sequences(fz: Fuzzer, examples: int, labels: bool = True) -> None:
    """Every sequence that applies here; `labels=False` leaves out the one that changes the
    server's weight label (it runs later, once nothing else reads the label)."""
    if fz.served("generate") != "served":
        return
    generate_then_abort(fz, examples)
    if labels and fz.served("updateWeightVersion") == "served":
        label_then_generate(fz, examples)
    if fz.served("renderCompletions") == "served" and fz.facts.has_tokenizer:
        render_generate_derender(fz, examples)
