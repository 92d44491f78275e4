"""The labelled wrong-media-type group: every served JSON operation's own example body, sent
as `text/plain`. ERR-006: "A Content-Type other than
application/json is a 400."

Deterministic on purpose: schemathesis mutates the media type only now and then, so a server
that ignores the Content-Type was found by luck. The body is the spec's example for the
operation (made acceptable like a positive case), so the only thing wrong is the media type:
a server that ignores it answers 200, not a 400 for some other reason.
"""

from __future__ import annotations

import json
import time
from typing import Any

import openapi
from conformance.fuzz.engine import Fuzzer, ServerGone
from conformance.fuzz.expectations import operations, request_schema
from conformance.fuzz.findings import GroupStats
from conformance.fuzz.oracles import error_body_shape

GROUP = "wrong-media-type"


def must_reject(op: dict[str, Any]) -> bool:
    """Whether the spec's `x-tito-non-json-body` makes a text/plain example a 400.

    Absent: vLLM's media-type check. `read-anyway` (abort: vLLM parses the body itself):
    never. `ignored` (the dev weight routes: the body counts as absent): only if the body
    has a required field.
    """
    how = op.get("x-tito-non-json-body")
    if how is None:
        return True
    if how == "ignored":
        name = request_schema(op)
        schema = openapi.load_spec()["components"]["schemas"].get(name or "", {})
        return bool(schema.get("required"))
    return False


def example_body(op: dict[str, Any]) -> Any:
    """The first example of the operation's JSON request schema (None: no body or example)."""
    name = request_schema(op)
    if name is None:
        return None
    component = openapi.load_spec()["components"]["schemas"][name]
    examples = component.get("examples") or []
    return json.loads(json.dumps(examples[0])) if examples else None


def fuzz_media(fz: Fuzzer, wanted: tuple[str, ...]) -> None:
    for op_id, (method, path, spec_op) in operations().items():
        if op_id not in wanted or not must_reject(spec_op) or fz.server_gone:
            continue
        if fz.served(op_id) != "served":
            continue
        body = example_body(spec_op)
        if body is None:
            continue
        op = fz.schema[path][method]
        stats = GroupStats(op_id, GROUP)
        fz.stats.append(stats)
        started = time.monotonic()
        case = fz.prepare(op_id, op.Case(body=body, media_type="application/json"), True)
        case.body = json.dumps(case.body)
        case.media_type = "text/plain"
        stats.cases += 1
        try:
            fz.send_and_judge(op_id, GROUP, case, stats, [media_type_rejected, error_body_shape])
        except ServerGone as exc:
            fz.server_gone = str(exc)
        stats.duration_s = round(time.monotonic() - started, 3)


def media_type_rejected(ctx: Any, response: Any, case: Any) -> None:
    """ERR-006: the example body, under a media type other than application/json, is a 400."""
    if response.status_code != 400:
        raise AssertionError(
            f"a valid JSON body sent as {case.media_type!r} answered {response.status_code}, "
            "not 400 "
            '("A Content-Type other than application/json is a 400.")'
        )
