"""Structure comparison of two HTTP answers to the same request (the fidelity diff's core).

Compared: status; media type (and its parameters, e.g. `charset`, when both are known: vLLM
sends `text/event-stream; charset=utf-8` and bare `application/json` every time, so a
parameter difference is real); the JSON key structure (keys, key order, types, null vs value,
the list lengths the request determines, a few enum values); and, for SSE, the event
structure. Never compared: token ids, logprob values, free text. Pure functions: the caller
fetches the answers (see `conformance.diff`).
"""

from __future__ import annotations

from conformance.diff.answer import NOT_JSON, Answer, Difference, Request, describe, sse_events
from conformance.diff.generate_rules import compare_body, finish_reason_determined, length_patterns
from conformance.diff.json_shape import JsonRules, collapse, compare_json, mask_request_id
from conformance.diff.sse_shape import compare_stream, framing

__all__ = [
    "Answer",
    "Difference",
    "JsonRules",
    "Request",
    "collapse",
    "compare_answers",
    "compare_json",
    "compare_stream",
    "framing",
    "rules_for",
    "sse_events",
]


def rules_for(request: Request, key_order: bool = True) -> JsonRules:
    """The JSON rules this request implies (which list lengths it determines)."""
    return JsonRules(
        length_patterns=length_patterns(request),
        key_order=key_order,
        timing_dependent=request.timing_dependent,
        finish_reason_determined=finish_reason_determined(request),
        empty_vs_items=not request.is_generate,
        value_normalizers={"request_id": mask_request_id},
    )


def compare_answers(
    request: Request, reference: Answer, candidate: Answer, key_order: bool = True
) -> list[Difference]:
    """Every structural difference of `candidate` from `reference`, repeats collapsed.

    With different statuses the bodies are not compared: a 200 body and a 400 body differ
    in every key, and the status already says what matters.
    """
    found: list[Difference] = []
    if reference.status != candidate.status:
        found.append(Difference("status", "status", str(reference.status), str(candidate.status)))
    found += _compare_content_type(reference, candidate)
    if found and found[0].kind == "status":
        return found
    if reference.is_stream or candidate.is_stream:
        if reference.is_stream and candidate.is_stream:
            found += compare_stream(request, reference, candidate, rules_for(request, key_order))
        return collapse(found)
    found += _compare_bodies(request, reference, candidate, key_order)
    return collapse(found)


def _compare_content_type(reference: Answer, candidate: Answer) -> list[Difference]:
    if reference.media_type != candidate.media_type:
        return [
            Difference(
                "content-type",
                "media type",
                str(reference.media_type),
                str(candidate.media_type),
            )
        ]
    params_known = reference.content_type_params_known and candidate.content_type_params_known
    if params_known and reference.media_params != candidate.media_params:
        return [
            Difference(
                "content-type",
                "media type parameters",
                "; ".join(reference.media_params) or "none",
                "; ".join(candidate.media_params) or "none",
            )
        ]
    return []


def _compare_bodies(
    request: Request, reference: Answer, candidate: Answer, key_order: bool
) -> list[Difference]:
    ref, cand = reference.json, candidate.json
    if ref is NOT_JSON or cand is NOT_JSON:
        if (ref is NOT_JSON) != (cand is NOT_JSON) or bool(reference.body) != bool(candidate.body):
            return [Difference("$", "body", _body_text(reference), _body_text(candidate))]
        return []
    found = compare_json(ref, cand, "$", rules_for(request, key_order))
    found += list(compare_body(request, ref, cand))
    return found


def _body_text(answer: Answer) -> str:
    if not answer.body:
        return "empty body"
    return describe(answer.json) if answer.json is not NOT_JSON else "a body that is not JSON"
