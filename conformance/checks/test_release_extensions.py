"""Release extensions (vLLM 0.33+): the derender output mode and parse_context.

These run only against a server that shows a feature or whose vendor claims it (the
requirements' `needs`): new optional fields and enum values are never failures under the
document's rules. A derender answer is no `GenerateResponse` of the document, so it is kept as
the spec's `GenerateDerenderResponse` / `GenerateDerenderStreamChunk`, which no SCHEMA-*
requirement judges; each check reads the fields of its own requirement (`message`, `delta`,
the logprob tokens) and judges their form against the spec's schemas, field by field.
"""

from __future__ import annotations

import re
from typing import Any

from conformance import api
from conformance.grounds import builds_on
from conformance.outcomes import Blocked
from conformance.registry import checks
from conformance.requirements.model import MUST, Feature, Requirement, Source
from conformance.session import Session
from conformance.tito.semantics import choices_of, fail, ids_of
from conformance.tito.streamed import index_of

PROTOCOL = "vllm/entrypoints/scale_out/token_in_token_out/protocol.py"
SERVING = "vllm/entrypoints/scale_out/token_in_token_out/serving.py"
REQUIREMENTS = [
    Requirement(
        "EXT-DERENDER-001",
        MUST,
        Feature.TEXT,
        "'derender' returns the parsed assistant message: the answer echoes output_mode "
        '"derender" and carries one `message` per choice with role "assistant"; a server '
        "without a tool or reasoning parser sends the text the text mode gives as its `content`.",
        "derender mode answers one assistant message per choice, its content the text mode's text",
        source=Source.RELEASE,
        evidence=f"vLLM 0.33.0 and 0.34.0 {PROTOCOL}: GenerateDerenderResponse, "
        f"GenerateDerenderChoice.message (ChatMessage); {SERVING}: "
        "serve_tokens_full_generator (derender_mode is the text level, then parsed)",
        needs=("output-mode-derender", "text-mode"),
        anchor="output-mode-derender",
        fields=("message",),
    ),
    Requirement(
        "EXT-DERENDER-002",
        MUST,
        Feature.TEXT,
        "With `stream`, 'derender' returns a parsed chat `delta` per chunk: every chunk echoes "
        'output_mode "derender", each choice\'s first delta carries role "assistant", and a '
        "choice's delta contents join to the non-streamed message's content.",
        "streamed derender chunks echo derender; deltas join to the message, role first",
        source=Source.RELEASE,
        evidence=f"vLLM 0.34.0 {PROTOCOL}: GenerateDerenderStreamResponse (output_mode "
        "Literal['derender']), GenerateDerenderStreamChoice.delta (DeltaMessage, dumped "
        f"without nulls); {SERVING}: serve_tokens_stream_generator (role_sent)",
        needs=("derender-stream", "output-mode-derender", "text-mode"),
        anchor="derender-stream",
        fields=("delta",),
    ),
    Requirement(
        "EXT-PARSE-001",
        MUST,
        Feature.TEXT,
        "parse_context.return_tokens_as_token_ids overrides --return-tokens-as-token-ids at the "
        "derender level: true makes every logprob token, top_logprobs included, a token_id:N "
        "placeholder naming its token.",
        "parse_context.return_tokens_as_token_ids true makes derender logprob tokens token_id:N",
        source=Source.RELEASE,
        evidence=f"vLLM 0.34.0 {PROTOCOL}: ParseContext.return_tokens_as_token_ids; "
        f"{SERVING}: _logprobs_tokenizer (the parse_context's value wins in derender mode)",
        needs=("parse-context", "output-mode-derender"),
        anchor="parse-context",
    ),
    Requirement(
        "EXT-PARSE-002",
        MUST,
        Feature.TEXT,
        "Chat context from `/render`. Read only when output_mode='derender' and ignored at "
        "other levels, so a rendered request can be sent to a prefill leg unchanged.",
        "a text-mode request with a parse_context (a newer field too) is answered as without",
        source=Source.RELEASE,
        evidence=f"vLLM 0.33.0 and 0.34.0 {PROTOCOL}: GenerateRequest.parse_context (its "
        "description, quoted) and GenerateRequest._check_parse_context_fields (unknown fields "
        "are a 400 in derender mode only)",
        needs=("parse-context", "text-mode"),
    ),
]
"""Release extensions: what vLLM 0.33 and 0.34 add to generate, judged where claimed or found.

The API document describes vLLM 0.32. Later releases add `output_mode: "derender"` (0.33: a
parsed assistant message per choice; 0.34: streamed, a chat `delta` per chunk) and the
`parse_context` request field (0.33; `return_tokens_as_token_ids` in it since 0.34). New
optional fields and enum values are never failures under the document's rules, so none of
these applies to a server that shows neither the feature nor a claim of it (`needs`); a server
that shows or claims one must do it as the release does. Their words are the release's own
(`Source.RELEASE`): quoted from its field descriptions where it has one, else stated, with
`evidence` naming the file and class of the wheel
(`tito-conformance drift --vllm-version 0.34.0` caches it).

They belong to the text mode's feature (derender is the text level, parsed) and to the
`derender-mode` and `parse-context` groups of `conformance.verdicts.levels`.
"""

WHOLE = "GenerateDerenderResponse"
CHUNK = "GenerateDerenderStreamChunk"
DERENDER = {"output_mode": "derender"}
TEXT = {"output_mode": "text"}
PLACEHOLDER = re.compile(r"^token_id:(\d+)$")
NEWER_FIELD = "tito_conformance_newer_render_field"  # what a newer /render might add


def seeded(s: Session, top: dict[str, Any]) -> dict[str, Any]:
    """The request the derender answers are compared on, in the output mode `top` names:
    seeded, as vLLM refuses n > 1 with greedy sampling."""
    return api.seeded(8, n=s.limits.n(2)) | top


def derender_answer(s: Session) -> dict[str, Any]:
    return s.remember(
        "derender",
        lambda: api.generate(s, seeded(s, DERENDER), what="derender-mode generate", schema=WHOLE),
    )


def _form(schema: str, value: Any, where: str) -> None:
    """Fail naming where one field departs from its spec schema, and how."""
    problems = api.schema_problems(schema, value)
    if problems:
        fail(f"{where} is not a {schema}: {'; '.join(problems)}")


def _content(choice: dict[str, Any]) -> Any:
    message = choice.get("message")
    return message.get("content") if isinstance(message, dict) else None


@checks("EXT-DERENDER-001", builds_on=("GEN-REQ-007",))
def test_derender_answers_a_message_per_choice(tito: Session) -> None:
    data = derender_answer(tito)
    if data.get("output_mode") != "derender":
        fail(f'sent output_mode "derender", the answer says {data.get("output_mode")!r}')
    text = api.generate(tito, seeded(tito, TEXT), what="text-mode generate of the same request")
    twins = {index_of(c.get("index", 0)): c for c in choices_of(text)}
    for choice in choices_of(data):
        where = f"choice {choice.get('index')}"
        message = choice.get("message")
        if not isinstance(message, dict):
            fail(f"{where} has message {message!r:.120} (keys {sorted(choice)})")
        _form("DerenderMessage", message, f"{where}'s message")
        if message.get("role") != "assistant":
            fail(f'{where}: message.role is {message.get("role")!r}, not "assistant"')
        twin = twins.get(index_of(choice.get("index", 0)), {})
        if not isinstance(twin.get("text"), str):
            builds_on(tito, "TEXT-001")  # no text to compare with: TEXT-001's
            fail(f"{where}: the text-mode answer to the same request has no text to compare with")
        if message.get("content") != twin["text"]:
            ids = f" (token_ids {ids_of(choice)} vs {ids_of(twin)})"
            fail(
                f"{where}: message.content {message.get('content')!r:.120} is not the text "
                f"mode's text {twin['text']!r:.120} for the same seeded request"
                + (ids if ids_of(choice) != ids_of(twin) else "")
            )


@checks("EXT-DERENDER-002", builds_on=("GEN-REQ-007", "STREAM-001", "TEXT-009"))
def test_streamed_derender_deltas(tito: Session) -> None:
    got = api.stream(
        tito, seeded(tito, DERENDER), what="streamed derender-mode generate", schema=CHUNK
    )
    if got.errors:
        fail(f"the derender stream sent an error event: {got.errors[0]!r:.200}")
    joined: dict[int, str] = {}
    for i, chunk in enumerate(got.chunks):
        if chunk.get("output_mode") != "derender":
            fail(
                f'stream chunk {i} echoes output_mode {chunk.get("output_mode")!r}, not "derender"'
            )
        for choice in chunk.get("choices") or []:
            index = index_of(choice.get("index", 0))
            where = f"stream chunk {i} (choice {index})"
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                fail(f"{where} has delta {delta!r:.120} (keys {sorted(choice)})")
            _form("DerenderDelta", delta, f"{where}'s delta")
            if index not in joined and delta.get("role") != "assistant":
                fail(
                    f"{where} is the choice's first and its delta.role is "
                    f'{delta.get("role")!r}, not "assistant": delta {delta!r:.120}'
                )
            content = delta.get("content")
            joined[index] = joined.get(index, "") + (content if isinstance(content, str) else "")
    for choice in choices_of(derender_answer(tito)):
        whole = _content(choice)
        if not isinstance(whole, str):
            raise Blocked(
                "EXT-DERENDER-001",
                f"the non-streamed derender choice {choice.get('index')} has no message "
                "content to compare with",
            )
        part = joined.get(index_of(choice.get("index", 0)))
        if part != whole:
            fail(
                f"choice {choice.get('index')}: the streamed deltas' content joins to "
                f"{part!r:.120}, the non-streamed message.content is {whole!r:.120}"
            )


def _tokens(choice: dict[str, Any], where: str) -> list[tuple[str, Any, Any]]:
    """(where, token, the id it must name or None) of every logprob entry and alternative."""
    content = (choice.get("logprobs") or {}).get("content")
    if not isinstance(content, list) or not content:
        fail(f"{where}: logprobs were requested, logprobs is {choice.get('logprobs')!r:.120}")
    ids = ids_of(choice)
    found: list[tuple[str, Any, Any]] = []
    for i, entry in enumerate(content):
        if not isinstance(entry, dict):
            continue
        at = f"{where} logprobs.content[{i}]"
        found.append((at, entry.get("token"), ids[i] if i < len(ids) else None))
        tops = entry.get("top_logprobs")
        found += [
            (f"{at}.top_logprobs[{j}]", top.get("token"), None)
            for j, top in enumerate(tops if isinstance(tops, list) else [])
            if isinstance(top, dict)
        ]
    return found


@checks("EXT-PARSE-001")
def test_parse_context_tokens_as_ids(tito: Session) -> None:
    context = {"parse_context": {"return_tokens_as_token_ids": True}}
    payload = api.body(4, logprobs=tito.limits.logprobs(1), top=DERENDER | context)
    data = api.generate(
        tito, payload, what="derender-mode generate with a parse_context", schema=WHOLE
    )
    for choice in choices_of(data):
        for where, token, token_id in _tokens(choice, f"choice {choice.get('index')}"):
            match = PLACEHOLDER.match(token) if isinstance(token, str) else None
            if match is None:
                fail(
                    f"{where}.token is {token!r:.60}, not a token_id:N placeholder "
                    "(parse_context.return_tokens_as_token_ids is true)"
                )
            assert match is not None
            if token_id is not None and int(match.group(1)) != token_id:
                fail(f"{where}.token is {token!r}, for the sampled token {token_id}")


@checks("EXT-PARSE-002")
def test_parse_context_ignored_outside_derender(tito: Session) -> None:
    payload = api.body(4, logprobs=tito.limits.logprobs(1), top=TEXT)
    plain = choices_of(api.generate(tito, payload, what="text-mode generate"))
    flag = any(  # the server's --return-tokens-as-token-ids decides, and nothing else may
        PLACEHOLDER.match(str(token)) for c in plain for _, token, _ in _tokens(c, "choice")
    )
    context = {"return_tokens_as_token_ids": not flag, NEWER_FIELD: 1}
    sent = payload | {"parse_context": context}
    data = api.generate(tito, sent, what="text-mode generate with a parse_context")
    for choice in choices_of(data):
        for where, token, _ in _tokens(choice, f"choice {choice.get('index')}"):
            if bool(PLACEHOLDER.match(str(token))) != flag:
                fail(
                    f"{where}.token is {token!r:.60} with parse_context {context} in text "
                    f"mode; without it the tokens are {'placeholders' if flag else 'decoded'}"
                )
