"""Sequences whose later step depends on an earlier answer; each step is judged by the same
checks as single cases. Generated parts come from schemathesis's positive strategies."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from schemathesis import GenerationMode

from .engine import Fuzzer

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
) -> None:
    fz.record(
        op_id,
        case.operation.label,
        GROUP,
        check,
        status,
        message,
        case.as_curl_command(headers=fz.headers),
        index,
    )
    fz.findings[(op_id, GROUP, check, status)].requirement_ids = (requirement,)


def generate_then_abort(fz: Fuzzer, examples: int) -> None:
    abort = fz.schema["/inference/v1/abort_requests"]["POST"]

    def on_case(case: Any, index: int) -> None:
        response = _send(fz, "generate", case, index)
        if response is None or response.status_code != 200:
            return
        rid = response.json().get("request_id")
        step = abort.Case(
            body={"request_ids": [rid]}, headers=dict(fz.auth), media_type="application/json"
        )
        answer = _send(fz, "abortRequests", step, index)
        if answer is not None and (answer.status_code != 200 or answer.content):
            _fail(
                fz,
                "abortRequests",
                step,
                "abort_by_returned_id",
                answer.status_code,
                f"aborting {rid!r} answered {answer.status_code} {answer.content[:200]!r}, "
                "not 200 with an empty body",
                index,
                "ABORT-006",
            )

    fz.run_group("generate-then-abort", GROUP, _generate_strategy(fz), examples, on_case)


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

    fz.run_group("render-generate-derender", GROUP, strategy, examples, on_case)


def run_sequences(fz: Fuzzer, examples: int) -> None:
    if fz.served("generate") != "served":
        return
    generate_then_abort(fz, examples)
    if fz.served("updateWeightVersion") == "served":
        label_then_generate(fz, examples)
    if fz.served("renderCompletions") == "served" and fz.facts.has_tokenizer:
        render_generate_derender(fz, examples)
