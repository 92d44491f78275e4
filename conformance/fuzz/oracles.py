"""Our checks, in schemathesis's check signature `(ctx, response, case)`.

They run next to schemathesis's own checks and fail by raising AssertionError, which
schemathesis reports as a custom failure with the case's curl line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openapi
from conformance.api import schema_problems
from conformance.wire import sse_data

PREFIX = "generate-tokens-"
GENERATE = "/inference/v1/generate"
DONE = "[DONE]"
FLAT_STATUSES = {401, 404, 405}
"""The documented exceptions to `{"error": {...}}`: 401 `{"error": "Unauthorized"}`,
Starlette's 404 and 405 `{"detail": ...}`."""


def _json(response: Any) -> Any:
    try:
        return json.loads(response.content or b"null")
    except ValueError:
        return None


def _is_stream(response: Any) -> bool:
    return str(response.headers.get("content-type", [""])[0]).startswith("text/event-stream")


def _header(response: Any, name: str) -> str:
    value = response.headers.get(name.lower(), [""])
    return str(value[0] if isinstance(value, list) else value)


def error_body_shape(ctx: Any, response: Any, case: Any) -> None:
    """Every 4xx/5xx body is `{"error": {message, type, param, code}}`, bar the flat ones."""
    status = response.status_code
    if status < 400:
        return None
    body = _json(response)
    if status == 401 and body == {"error": "Unauthorized"}:
        return None
    if status in (404, 405) and isinstance(body, dict) and isinstance(body.get("detail"), str):
        return None
    if openapi.is_valid("ErrorResponse", body):
        return None
    errors = list(openapi.schema_validator("ErrorResponse").iter_errors(body))
    if errors:
        flat = (
            " (the flat shapes are only documented for 401/404/405)"
            if status not in FLAT_STATUSES
            else ""
        )
        raise AssertionError(
            f'a {status} body is not the {{"error": {{...}}}} shape{flat}: '
            f"{errors[0].message[:200]}; body: {response.content[:200]!r}"
        )
    if body["error"]["code"] != status:
        raise AssertionError(f"error.code {body['error']['code']} differs from HTTP {status}")
    return None


def request_id_prefix(ctx: Any, response: Any, case: Any) -> None:
    """Every generate answer's `request_id` starts with `generate-tokens-`."""
    if case.path != GENERATE or response.status_code != 200:
        return None
    if _is_stream(response):
        ids = [c.get("request_id") for c in stream_payloads(response) if isinstance(c, dict)]
    else:
        body = _json(response)
        ids = [body.get("request_id")] if isinstance(body, dict) else []
    bad = [i for i in ids if i is not None and not str(i).startswith(PREFIX)]
    if bad:
        raise AssertionError(f"request_id {bad[0]!r} lacks the {PREFIX!r} prefix")
    return None


def stream_payloads(response: Any) -> list[Any]:
    """The JSON of each event of a stream (None where an event is not JSON)."""
    out: list[Any] = []
    for event in _events(response):
        if event != DONE:
            try:
                out.append(json.loads(event))
            except ValueError:
                out.append(None)
    return out


def _events(response: Any) -> list[str]:
    return sse_data(response.content)


def _judge_stream(response: Any, case: Any, problem_of: Callable[[bytes], str]) -> None:
    """Judge a 200 stream of generate by `problem_of` its bytes; anything else is not ours."""
    if case.path != GENERATE or response.status_code != 200 or not _is_stream(response):
        return
    problem = problem_of(response.content)
    if problem:
        raise AssertionError(problem)


def stream_well_framed(ctx: Any, response: Any, case: Any) -> None:
    """A stream is `data:` events split by blank lines, ending `data: [DONE]` (STREAM-001/002)."""
    _judge_stream(response, case, framing_problem)


def stream_chunks_valid(ctx: Any, response: Any, case: Any) -> None:
    """Each event of a stream is valid against the spec (SCHEMA-STREAM-001), framing aside."""
    _judge_stream(response, case, chunk_problem)


def framing_problem(content: bytes) -> str:
    """What is wrong with the framing of a stream's bytes ("" when nothing); the chunks' form is
    `chunk_problem`'s (another requirement)."""
    text = content.decode("utf-8", errors="replace")
    if not text.endswith("\n\n"):
        return f"the stream does not end with a blank line: ...{text[-60:]!r}"
    events = _events(RawBody(content))
    if not events or events[-1] != DONE:
        last = events[-1][:80] if events else "nothing"
        return f"the stream does not end with data: [DONE] (last event: {last!r})"
    if DONE in events[:-1]:
        return "data: [DONE] is not the last event"
    for index, data in enumerate(events):
        if "\n" in data:
            return (
                f"event {index} spans several data lines (events not split by a blank line?): "
                f"{data[:120]!r}"
            )
    return ""


def chunk_problem(content: bytes) -> str:
    """The first event of a stream that is not a valid chunk, at its leaf ("" when none)."""
    schema = _schema_of(GENERATE, "post", 200, SSE)
    for index, data in enumerate(_events(RawBody(content))):
        if data == DONE or "\n" in data or schema is None:
            continue
        problems = schema_problems(schema, {"data": data}, limit=2)
        if problems:
            return f"event {index} is not a valid chunk: {'; '.join(problems)}"
    return ""


SSE = "text/event-stream"


def answer_problems(response: Any, case: Any, limit: int = 3) -> list[str]:
    """Where an answer departs from the schema the spec documents for it, each at its leaf:
    the JSON path, the rule broken and the value (the suite's `api.schema_problems`, never a
    whole body against a whole `oneOf`). An SSE answer is judged event by event."""
    media = _header(response, "content-type").split(";")[0].strip().lower()
    schema = _schema_of(case.path, case.method, response.status_code, media)
    if schema is None:
        return []
    if media != SSE:
        body = _json(response)
        return schema_problems(schema, body, limit) if body is not None else []
    for index, data in enumerate(_events(response)):
        problems = [] if data == DONE else schema_problems(schema, {"data": data}, limit)
        if problems:
            return [f"event {index} {problem}" for problem in problems]
    return []


def _schema_of(path: str, method: str, status: int, media: str) -> str | None:
    """The JSON pointer of the schema of one documented answer (an SSE one: of one event)."""
    found = openapi.media_schema(path, method, status, media)
    if found is None:
        return None
    pointer, content = found
    key = "itemSchema" if media == SSE else "schema"
    if key not in content:
        return None
    return f"{pointer}/content/{media.replace('/', '~1')}/{key}"


class RawBody:
    def __init__(self, content: bytes) -> None:
        self.content = content


OUR_CHECKS = (error_body_shape, request_id_prefix, stream_well_framed, stream_chunks_valid)
