"""The output_mode echo and text mode."""

from __future__ import annotations

import re

from conformance import api
from conformance.grounds import builds_on
from conformance.grounds.probes import text_broken
from conformance.outcomes import Absent, Blocked
from conformance.registry import checks
from conformance.requirements.model import MAY, MUST, Feature, Requirement
from conformance.session import Session
from conformance.tito.semantics import as_bytes, choices_of, fail, ids_of
from conformance.tito.streamed import index_of

REQUIREMENTS = [
    Requirement(
        "TEXT-001",
        MUST,
        Feature.TEXT,
        "`text` on every choice and decoded tokens with `bytes` in `logprobs`",
        "text mode puts text on every choice",
        needs=("text-mode",),
        anchor="text-mode",
        diff=("text",),
        fields=("text",),
    ),
    Requirement(
        "TEXT-002",
        MUST,
        Feature.TEXT,
        "decoded tokens with `bytes` in `logprobs`",
        "text-mode logprob entries carry bytes",
        needs=("text-mode",),
        diff=("text-logprobs-2",),
        fields=("bytes",),
    ),
    Requirement(
        "TEXT-003",
        MUST,
        Feature.TEXT,
        'With output_mode: "text", they are ChatCompletionLogProbs carrying the decoded token '
        "strings and their UTF-8 bytes for the sampled token and every entry in top_logprobs",
        "text-mode logprobs are ChatCompletionLogProbs: token and its UTF-8 bytes everywhere",
        needs=("text-mode",),
        diff=("text-logprobs-2",),
        fields=("logprobs",),
    ),
    Requirement(
        "TEXT-004",
        MUST,
        Feature.TEXT,
        "text returns text and token IDs in a single call",
        "text mode returns the same token_ids as tokens mode for a seeded request",
        needs=("text-mode",),
    ),
    Requirement(
        "TEXT-005",
        MUST,
        Feature.TEXT,
        "Every response and every stream chunk echoes output_mode.",
        "every non-streamed response carries output_mode",
        needs=("generate",),
        anchor="output-mode-echo",
        fields=("output_mode",),
    ),
    Requirement(
        "TEXT-006",
        MUST,
        Feature.TEXT,
        "Every response and every stream chunk echoes output_mode.",
        "every stream chunk carries output_mode",
        needs=("generate",),
        fields=("output_mode", "text"),
    ),
    Requirement(
        "TEXT-007",
        MUST,
        Feature.TEXT,
        "check that the output_mode in the response matches the one you sent.",
        "the echoed output_mode is the one sent",
        needs=("text-mode",),
        diff=("output-mode-tokens",),
        fields=("output_mode", "text"),
    ),
    Requirement(
        "TEXT-008",
        MUST,
        Feature.TEXT,
        "so skip_special_tokens, spaces_between_special_tokens, stop and "
        "include_stop_str_in_output behave as they do on /v1/completions.",
        "skip_special_tokens removes special tokens from text",
        needs=("text-mode",),
        diff=("text-skip-special-false",),
    ),
    Requirement(
        "TEXT-009",
        MUST,
        Feature.TEXT,
        "With stream: true, each choice's text is the delta since the previous chunk.",
        "streamed text deltas concatenate to the non-streamed text",
        needs=("text-mode",),
        diff=("text-stream-n2-usage-logprobs",),
    ),
    Requirement(
        "TEXT-010",
        MUST,
        Feature.TEXT,
        'output_mode: "text" with sampling_params.detokenize: false.',
        "text mode with detokenize false is a 400",
        expected_status=400,
        needs=("generate",),
        diff=("text-detokenize-false",),
    ),
    Requirement(
        "TEXT-011",
        MAY,
        Feature.TEXT,
        "a server started with --return-tokens-as-token-ids returns token_id:N placeholders "
        "there instead, as /v1/completions does.",
        "token_id:N placeholders, when sent, name the sampled token ids",
        needs=("text-mode",),
    ),
]

PLACEHOLDER = re.compile(r"^token_id:(\d+)$")
SPECIAL = re.compile(r"^<\|.+\|>$")


def text_payload(s: Session) -> dict:
    # named: GEN-RESP-004 holds every text-mode answer, and each chunk, to the id it sent
    params = api.seeded(10, n=s.limits.n(2), logprobs=s.limits.logprobs(2))
    return params | {"output_mode": "text", "request_id": s.rid("text")}


def text_response(s: Session) -> dict:
    return s.remember("text", lambda: api.generate(s, text_payload(s), what="text-mode generate"))


def items(s: Session) -> list[tuple[str, dict]]:
    out = []
    for choice in choices_of(text_response(s)):
        content = (choice.get("logprobs") or {}).get("content")
        if not isinstance(content, list) or not content:
            fail(
                f"choice {choice.get('index')}: text mode with logprobs 2 returned logprobs "
                f"{choice.get('logprobs')!r:.120}"
            )
        assert isinstance(content, list)
        for i, entry in enumerate(content):  # entries that are no objects: SCHEMA-GEN-001's
            where = f"choice {choice.get('index')} entry {i}"
            if isinstance(entry, dict):
                out.append((where, entry))
                tops = entry.get("top_logprobs")
                tops = tops if isinstance(tops, list) else []
                out += [(f"{where} top {j}", t) for j, t in enumerate(tops) if isinstance(t, dict)]
    if not out:
        fail("text mode with logprobs 2 returned no logprob entry that is an object")
    return out


@checks("TEXT-001")
def test_text_on_every_choice(tito: Session) -> None:
    for i, choice in enumerate(choices_of(text_response(tito))):
        if not isinstance(choice.get("text"), str):
            fail(f"choice {i} of a text-mode response has text {choice.get('text')!r}")
    why = text_broken(tito)  # what the text-mode checks stand on, judged here too
    if why is not None:
        fail(why)


@checks("TEXT-002")
def test_text_logprobs_have_bytes(tito: Session) -> None:
    for where, item in items(tito):
        if "token" not in item:  # not a text-mode item at all: TEXT-003's
            raise Blocked("TEXT-003", f"{where} is not a text-mode item: {item}")
        placeholder = PLACEHOLDER.match(str(item.get("token")))
        if "bytes" not in item or (item["bytes"] is None and not placeholder):
            fail(f"{where}: text-mode logprob item has no bytes: {item}")


@checks("TEXT-003")
def test_text_logprobs_shape(tito: Session) -> None:
    for where, item in items(tito):
        token = item.get("token")
        if not isinstance(token, str) or "token_id" in item:
            fail(
                f"{where}: a ChatCompletionLogProbs item has a token string and no token_id; "
                f"got keys {sorted(item)}"
            )
        assert isinstance(token, str)
        raw = item.get("bytes")
        if raw is not None and as_bytes(raw) is None:
            fail(f"{where}: bytes {raw!r:.80} are not a list of byte values")
        if raw is not None and "\ufffd" not in token and as_bytes(raw) != token.encode():
            fail(f"{where}: bytes {raw} are not the UTF-8 of token {token!r}")


@checks("TEXT-004", builds_on=("GEN-REQ-007", "GEN-RESP-001", "GEN-RESP-003"))
def test_text_mode_same_tokens(tito: Session) -> None:
    payload = text_payload(tito) | {"output_mode": "tokens"}
    tokens = api.generate(tito, payload)
    for a, b in zip(choices_of(tokens), choices_of(text_response(tito)), strict=False):
        if ids_of(a) != ids_of(b):
            fail(
                f"choice {a.get('index')}: tokens mode {a.get('token_ids')} vs text mode "
                f"{b.get('token_ids')} for the same seeded request"
            )


@checks("TEXT-005")
def test_response_echoes_output_mode(tito: Session) -> None:
    data = api.generate(tito, api.body(2, top={"output_mode": "tokens"}))
    if "output_mode" not in data:
        fail("the response does not echo output_mode (the server predates the field)")
    if tito.features.tokenizer and "output_mode" not in text_response(tito):
        fail("the text-mode response does not echo output_mode")


@checks("TEXT-006")
def test_chunks_echo_output_mode(tito: Session) -> None:
    got = api.stream(tito, api.body(4, ignore_eos=True))
    for i, chunk in enumerate(got.chunks):
        if "error" not in chunk and "output_mode" not in chunk:
            fail(f"stream chunk {i} does not echo output_mode")


@checks("TEXT-007")
def test_echo_matches(tito: Session) -> None:
    mode = text_response(tito).get("output_mode")
    if mode != "text":
        fail(f'sent output_mode "text", the response says {mode!r}')
    tokens = api.generate(tito, api.body(2, top={"output_mode": "tokens"}))
    if tokens.get("output_mode") != "tokens":
        fail(f'sent output_mode "tokens", the response says {tokens.get("output_mode")!r}')


def _special_candidate(s: Session) -> int | None:
    if s.features.render:
        reply = s.client.post(
            "/v1/chat/completions/render",
            {"model": s.features.model, "messages": [{"role": "user", "content": "hi"}]},
        )
        data = reply.json() if reply.status == 200 else None
        if data is not None and api.schema_leaves("GenerateRequest", data):
            raise Blocked("RENDER-002", "the chat render's answer is no GenerateRequest")
        if isinstance(data, dict) and data.get("token_ids"):
            return int(data["token_ids"][0])
    return None


@checks("TEXT-008")
def test_skip_special_tokens(tito: Session) -> None:
    candidate = _special_candidate(tito)
    if candidate is None:
        raise Absent("not applicable: no chat render to find a special token with")
    texts = {}
    for skip in (False, True):
        payload = api.body(
            2,
            ignore_eos=True,
            allowed_token_ids=[candidate],
            skip_special_tokens=skip,
            top={"output_mode": "text"},
        )
        choice = choices_of(api.generate(tito, payload))[0]
        if set(choice.get("token_ids") or []) != {candidate}:
            raise Absent(
                "not applicable: the server does not honour allowed_token_ids, so no "
                "special token can be forced"
            )
        texts[skip] = choice.get("text", "")
    if not texts[False]:
        raise Absent(f"not applicable: token {candidate} renders as empty text")
    if texts[True] == texts[False]:
        fail(f"skip_special_tokens true still shows the special token {candidate}: {texts[True]!r}")


def text_stream(s: Session) -> api.Streamed:
    return s.remember("text-stream", lambda: api.stream(s, text_payload(s)))


@checks("TEXT-009", builds_on=("STREAM-001", "GEN-REQ-007"))
def test_text_deltas(tito: Session) -> None:
    joined = text_stream(tito).choices()
    for choice in choices_of(text_response(tito)):
        if not isinstance(choice.get("text"), str):
            builds_on(tito, "TEXT-001")  # no text to compare with: TEXT-001's
        part = joined.get(index_of(choice.get("index", 0)))
        if part is None or part.text != choice.get("text"):
            fail(
                f"choice {choice.get('index')}: streamed text {part.text if part else None!r} "
                f"!= non-streamed {choice.get('text')!r}"
            )


@checks(
    "STREAM-003",
    needs=("text-mode",),
    builds_on=("STREAM-001", "GEN-REQ-007", "GEN-RESP-001", "GEN-RESP-003"),
)
def test_text_stream_ids(tito: Session) -> None:
    """Text mode streams token_ids beside the text: its deltas join to the non-streamed ids
    as a tokens-mode stream's do."""
    joined = text_stream(tito).choices()
    for choice in choices_of(text_response(tito)):
        part = joined.get(index_of(choice.get("index", 0)))
        if part is not None and part.token_ids != choice.get("token_ids"):
            fail(
                f"text mode, choice {choice.get('index')}: streamed deltas join to "
                f"{part.token_ids}, the non-streamed result is {choice.get('token_ids')}"
            )


@checks("TEXT-010")
def test_text_needs_detokenize(tito: Session) -> None:
    api.rejected(
        tito,
        api.body(2, detokenize=False, top={"output_mode": "text"}),
        what='output_mode "text" with detokenize false',
    )


@checks("TEXT-011")
def test_placeholders_name_tokens(tito: Session) -> None:
    found = False
    for choice in choices_of(text_response(tito)):
        content = (choice.get("logprobs") or {}).get("content") or []
        for i, entry in enumerate(content):
            match = PLACEHOLDER.match(str(entry.get("token")))
            if match is None:
                continue
            found = True
            if int(match.group(1)) != choice["token_ids"][i]:
                fail(
                    f"placeholder {entry.get('token')} for token_ids[{i}] = "
                    f"{choice['token_ids'][i]}"
                )
    if not found:
        raise Absent(
            "not applicable: the server does not send token_id:N placeholders "
            "(not started with --return-tokens-as-token-ids)"
        )
