"""Talking TITO: request builders, stream collection, and the schema reading of bodies.

A check reads only the fields of its own requirement: `generate` and `read_stream` demand a 200
and JSON, nothing more, so one wrong field fails the requirement it breaks and not every check
that happened to see the body. Every generate body and stream chunk a check receives is kept on
the session; the SCHEMA-* requirements judge them all against `openapi/tito.yaml`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema import ValidationError

from conformance.outcomes import Failure
from conformance.session import Session
from conformance.tito import answers
from conformance.tito.outputs import lean
from conformance.tito.streamed import Streamed, tokens_in
from conformance.wire import Reply, ServerBroke, Stream
from openapi import SPEC_URI, is_valid, schema_validator

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"
LEGACY_ABORT = "/abort_requests"
PROMPT = [10, 11, 12, 13]
SEED = 1234


def body(
    max_tokens: int | None = 8,
    prompt: list[int] | None = None,
    top: dict[str, Any] | None = None,
    **sampling: Any,
) -> dict[str, Any]:
    """A generate body: a short prompt, greedy unless told otherwise."""
    params: dict[str, Any] = {"temperature": 0}
    if max_tokens is not None:
        params["max_tokens"] = max_tokens
    params.update(sampling)
    result: dict[str, Any] = {"token_ids": list(prompt or PROMPT), "sampling_params": params}
    result.update(top or {})
    return result


def invalid() -> dict[str, Any]:
    """A generate body wrong in several independent ways (no values of the wrong type): any
    server that validates at all rejects it, whichever one rule it misses (each rule is its
    own requirement). For checks about how rejections look, not about one rule."""
    return {
        "token_ids": [],
        "sampling_params": {"max_tokens": 0, "n": 0, "top_p": 5},
        "output_mode": "bogus",
    }


def seeded(max_tokens: int = 12, **sampling: Any) -> dict[str, Any]:
    """A sampled but reproducible request (temperature 1, fixed seed)."""
    return body(max_tokens, temperature=1.0, seed=SEED, **sampling)


def _leaves(error: ValidationError) -> list[ValidationError]:
    """The specific causes of an error: for a oneOf/anyOf, those of the branch the body comes
    closest to. Closest means the fewest faults of the object's own form (a key it lacks, or a
    key whose value has the wrong form: an old server's chunk that lacks one key is that kind of
    chunk, not a usage chunk whose `choices` and `usage` are both wrong), then the fewest
    errors, then the deepest."""
    if not error.context:
        return [error]
    here = len(error.absolute_path)
    branches: dict[Any, list[ValidationError]] = {}
    for e in error.context:
        branches.setdefault(e.relative_schema_path[0], []).extend(_leaves(e))

    def own_form(e: ValidationError) -> bool:
        depth = len(e.absolute_path)
        return depth <= here or (depth == here + 1 and e.validator in _FORM)

    def distance(leaves: list[ValidationError]) -> tuple[int, int, int]:
        faults = sum(own_form(e) for e in leaves)
        return faults, len(leaves), -max(len(e.absolute_path) for e in leaves)

    return min(branches.values(), key=distance)


_FORM = frozenset({"type", "const", "enum", "minItems", "maxItems"})
"""Validators that say a present key's value is of another form, not just another value."""


def _deepest(error: ValidationError) -> ValidationError:
    """The leaf to report: a chunk with one wrong field is reported at that field, not as "not
    an error event", and an error body at its error, not as "not a chunk"."""
    return max(_leaves(error), key=lambda e: len(e.absolute_path))


BULK_INTS = 1024
"""A list of plain integers longer than this is validated by its extremes (see `_compact`)."""


def _compact(instance: Any) -> Any:
    """`instance` with every long list of plain integers cut to its first BULK_INTS items plus
    its smallest and largest value. The spec constrains such items only by type and bounds
    (and a list by at most 128 items), so the cut list breaks exactly the rules the whole one
    does, and a body carrying a whole vocabulary per token (`--return-sampling-mask`) is
    judged in milliseconds, not minutes. A bound broken past the cut is reported at the end
    of the cut list."""
    if isinstance(instance, dict):
        return {k: _compact(v) for k, v in instance.items()}
    if not isinstance(instance, list):
        return instance
    if len(instance) > BULK_INTS + 2 and all(type(v) is int for v in instance):
        return [*instance[:BULK_INTS], min(instance), max(instance)]
    return [_compact(v) for v in instance]


@dataclass(frozen=True)
class Leaf:
    """One place a body departs from its schema: what to report, and the keys that name it
    (the path's, and a missing or unexpected property's)."""

    text: str
    keys: frozenset[str]


def schema_leaves(schema: str, instance: Any, limit: int = 3, every: bool = False) -> list[Leaf]:
    """Where `instance` departs from `schema`: per error, the deepest path, what was expected,
    what came; with `every`, each leaf of the branch the body comes closest to, deepest first
    (a body that breaks two rules of one branch shows both: what charges them needs both)."""
    found: list[Leaf] = []
    instance = _compact(instance)
    if is_valid(schema, instance):
        return found
    validator = schema_validator(schema)
    for error in sorted(validator.iter_errors(instance), key=lambda e: e.path):
        chosen = [_deepest(error)]
        if every:
            chosen = sorted(_leaves(error), key=lambda e: -len(e.absolute_path))
        for leaf in chosen:
            problem = _leaf(validator, instance, leaf)
            if problem.text not in (f.text for f in found):
                found.append(problem)
            if len(found) >= limit:
                return found
    return found


def _leaf(validator: Any, instance: Any, leaf: ValidationError) -> Leaf:
    where = "/" + "/".join(str(p) for p in leaf.absolute_path)
    if leaf.validator in ("type", "enum", "const", "pattern", "minimum", "maximum"):
        text = f"expected {leaf.validator} {leaf.validator_value!r}, got {leaf.instance!r:.80}"
    else:
        text = leaf.message[:200]
    keys = {str(p) for p in leaf.absolute_path} | _deciding(validator, leaf)
    if leaf.validator is None:  # a `false` property schema: the key(s) holding the value
        parent = _at(instance, leaf.absolute_path)
        if isinstance(parent, dict):
            keys |= {str(k) for k, v in parent.items() if v is leaf.instance}
    if isinstance(leaf.instance, dict) and leaf.validator == "required":
        keys |= {str(k) for k in leaf.validator_value if k not in leaf.instance}
    if isinstance(leaf.instance, dict) and leaf.validator == "additionalProperties":
        known = leaf.schema.get("properties", {}) if isinstance(leaf.schema, dict) else {}
        keys |= {str(k) for k in leaf.instance if k not in known}
    return Leaf(f"at {where}: {text}", frozenset(keys))


def _at(instance: Any, path: Any) -> Any:
    """The value at a JSON path, or the last container reached (the parent of a `false`'s
    value: the schema error's own path stops at the parent)."""
    for part in path:
        if isinstance(instance, dict | list):
            try:
                instance = instance[part]
            except (KeyError, IndexError, TypeError):
                return instance
    return instance


def _deciding(validator: Any, leaf: ValidationError) -> set[str]:
    """The keys whose values chose the rule the leaf broke: an `if`'s (a final chunk's rules
    hold because of its finish_reason), a discriminator's and a sibling `const`'s (a text-mode
    body's rules, because of its output_mode). A wrong value there shows up as a broken rule
    elsewhere."""
    found: set[str] = set()
    node: Any = validator.schema
    for part in leaf.absolute_schema_path:
        while isinstance(node, dict) and "$ref" in node and part not in node:
            ref = str(node["$ref"])
            ref = SPEC_URI + ref if ref.startswith("#") else ref
            try:
                node = validator._resolver.lookup(ref).contents
            except Exception:  # an unresolvable reference: what was found so far stands
                return found
        if isinstance(node, dict) and part in ("then", "else") and isinstance(node.get("if"), dict):
            cond = node["if"]
            found |= set(cond.get("properties", {})) | set(cond.get("required", []))
        if isinstance(node, dict) and isinstance(node.get("discriminator"), dict):
            found.add(str(node["discriminator"].get("propertyName")))
        if isinstance(node, dict) and part == "properties" and isinstance(node.get(part), dict):
            # a sibling `const` (a chunk's output_mode) says which kind of object this is
            found |= {k for k, v in node[part].items() if isinstance(v, dict) and "const" in v}
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
    return found


def schema_problems(schema: str, instance: Any, limit: int = 3) -> list[str]:
    """`schema_leaves`, as the lines a report shows."""
    return [leaf.text for leaf in schema_leaves(schema, instance, limit)]


def validate(schema: str, instance: Any, what: str) -> None:
    """Fail with the first schema errors, each at its deepest path."""
    problems = schema_problems(schema, instance)
    if problems:
        raise AssertionError(f"{what} does not match {schema}: {'; '.join(problems)}")


class StatusMismatch(Failure):
    """An answer's status was not the one demanded: the server's own choice, never a reading
    of some other answer's malformed body (`Collector` does not block it on one). It names
    the exchange (its reproducer) and the status seen (its evidence), where it has them."""

    def __init__(self, message: str, reply: Reply | None = None) -> None:
        seen = "" if reply is None else f"answer status = {reply.status}"
        super().__init__(message, evidence=seen)
        self.exchange = None if reply is None else reply.exchange


def status_is(reply: Reply, expected: int, what: str) -> None:
    if reply.status != expected:
        raise StatusMismatch(f"{what}: expected HTTP {expected}, got {answer_of(reply)}", reply)


def answer_of(reply: Reply) -> str:
    """An answer in one line: an error's body as sent (it is short and says why), a success's
    JSON body by its keys (its tokens are no evidence, and would crowd the report out)."""
    if 200 <= reply.status < 300:
        try:
            data = json.loads(reply.body)
        except ValueError:
            data = None
        if isinstance(data, dict):
            keys = ", ".join(list(data)[:10]) + (", ..." if len(data) > 10 else "")
            return f"{reply.status} with a JSON body (keys: {keys})"
    return f"{reply.status}: {reply.body[:300]!r}"


def generate(
    s: Session,
    payload: dict[str, Any],
    headers: dict[str, str] | None = None,
    what: str = "generate",
    schema: str = "GenerateResponse",
) -> dict[str, Any]:
    """POST generate, demand a 200 and a JSON object (its schema is SCHEMA-GEN-001's; a
    release extension's answer names its own `schema`, which no SCHEMA-* requirement judges)."""
    payload = lean(payload, s.limits.bytes_per_token)
    reply = s.client.post(GENERATE, payload, headers=headers, timeout=timeout_for(s, payload))
    status_is(reply, 200, what)
    data = reply.json()
    if not isinstance(data, dict):
        raise AssertionError(f"{what}: the 200 body is not a JSON object: {reply.body[:200]!r}")
    s.observe(schema, what, data)
    if schema == "GenerateResponse":
        s.keep(answers.of_body(what, payload, data, headers))
    if not is_json_media(reply):
        s.observe_media(schema, what, reply.headers.get("content-type", "(none)"))
    return data


def is_json_media(reply: Reply) -> bool:
    """The answer says it is JSON (`application/json`, parameters allowed), as the spec's
    responses are documented: a client picks its decoder by it."""
    media = reply.headers.get("content-type", "").split(";")[0].strip().lower()
    return media == "application/json"


def json_media(reply: Reply, what: str) -> None:
    if not is_json_media(reply):
        media = reply.headers.get("content-type")
        raise AssertionError(f"{what}: a JSON answer came as Content-Type {media!r}")


def empty_200(reply: Reply, what: str) -> None:
    """An abort's answer: 200, no body, and no Content-Type that promises one (vLLM sends
    none; a JSON client reading `application/json` would fail on the empty body)."""
    status_is(reply, 200, what)
    if reply.body.strip():
        raise AssertionError(f"{what}: the response is not empty: {reply.body[:200]!r}")
    if is_json_media(reply):
        media = reply.headers.get("content-type")
        raise AssertionError(f"{what}: an empty response came as Content-Type {media!r}")


def timeout_for(s: Session, payload: Any) -> float:
    """The request's time bound at this server's pace: its tokens, or the context by default."""
    params = payload.get("sampling_params") if isinstance(payload, dict) else None
    tokens = params.get("max_tokens") if isinstance(params, dict) else None
    if not isinstance(tokens, int):
        tokens = s.limits.room(len(PROMPT)) or 0
    return s.timeout_for(tokens)


def rejected(
    s: Session,
    payload: Any,
    status: int = 400,
    path: str = GENERATE,
    headers: dict[str, str] | None = None,
    content: bytes | None = None,
    auth: bool = True,
    what: str = "request",
    exact: bool = False,
) -> Reply:
    """Send something bad and demand `status` (the body shape is ERR-002's business). A 422
    stands for a 400 unless `exact`: that validation answers 400, not 422, is ERR-003's."""
    if content is not None:
        reply = s.client.post(path, content=content, headers=headers, auth=auth)
    else:
        reply = s.client.post(path, payload, headers=headers, auth=auth)
    if status == 400 and reply.status == 422 and not exact:
        return reply
    status_is(reply, status, what)
    return reply


def chunk_of(data: str, what: str) -> dict[str, Any]:
    """One stream event's JSON object (not [DONE]); anything else is the server breaking SSE."""
    try:
        chunk = json.loads(data)
    except ValueError:
        raise ServerBroke(f"{what} is neither [DONE] nor JSON: {data[:200]!r}") from None
    if not isinstance(chunk, dict):
        raise ServerBroke(f"{what} is not a JSON object: {data[:200]!r}")
    return chunk


def read_stream(
    stream: Stream,
    stop_after_tokens: int | None = None,
    s: Session | None = None,
    schema: str = "GenerateStreamPayload",
    *,
    parse: Callable[[str, str], dict[str, Any]] = chunk_of,
    on_tokens: Callable[[int], bool] | None = None,
) -> Streamed:
    """Read every event; optionally stop once enough tokens arrived. Chunks are kept on the
    session `s` as `schema` (for SCHEMA-STREAM-001), not validated here. `parse` turns an
    event's data into its chunk (`chunk_of`: anything but a JSON object breaks the stream);
    `on_tokens` is told the tokens so far each time a chunk brought some, and stops the
    reading by answering True (the load's timing, its aborts and hang-ups)."""
    chunks: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    done = False
    after_done = 0
    tokens = 0
    try:
        for data in stream.events():
            if done:
                after_done += 1
                continue
            if data == "[DONE]":
                done = True
                continue
            chunk = parse(data, f"stream event #{len(chunks) + 1}")
            if s is not None:
                s.observe(schema, f"stream event #{len(chunks) + 1}", chunk)
            chunks.append(chunk)
            if "error" in chunk:
                errors.append(chunk)
            got = tokens_in(chunk)
            tokens += got
            if got and on_tokens is not None and on_tokens(tokens):
                break
            if stop_after_tokens is not None and tokens >= stop_after_tokens:
                break
    except ServerBroke:
        # A stream that broke is read no further; its failure (kept by the memo with this
        # frame) need not keep up to MAX_EVENTS parsed chunks with it.
        chunks.clear()
        errors.clear()
        raise
    ctype = stream.headers.get("content-type", "")
    return Streamed(stream.status, ctype, chunks, done, after_done, errors)


def stream(
    s: Session,
    payload: dict[str, Any],
    headers: dict[str, str] | None = None,
    what: str = "stream",
    schema: str = "GenerateStreamPayload",
) -> Streamed:
    """POST a streamed generate and read it to the end; demands 200 and text/event-stream."""
    payload = lean(payload, s.limits.bytes_per_token)
    deadline = max(s.config.stream_deadline, timeout_for(s, payload))
    with s.client.stream(
        GENERATE, {**payload, "stream": True}, headers=headers, deadline=deadline
    ) as st:
        if st.status != 200:
            reply = st.read_body()
            raise AssertionError(
                f"{what}: expected HTTP 200, got {st.status}: {reply.body[:300]!r}"
            )
        ctype = st.headers.get("content-type", "")
        if not ctype.startswith("text/event-stream"):
            raise AssertionError(f"{what}: Content-Type is {ctype!r}, not text/event-stream")
        streamed = read_stream(st, s=s, schema=schema)
    if schema == "GenerateStreamPayload":
        s.keep(answers.of_stream(what, payload, streamed, headers))
    return streamed


def dumps_body(payload: Any) -> bytes:
    """The bytes `post` would send for `payload`, for requests with a custom Content-Type."""
    return json.dumps(payload, separators=(",", ":")).encode()
