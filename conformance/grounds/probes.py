"""The foundation probes: what each ground's owner looks like broken on this server.

Many checks compare two answers (the same seed twice, a stream against its whole answer, text
against text) or read a field another requirement owns. Each probe here asks the server the
smallest question that shows one such ground broken, and says what it saw (None: sound). A
probe shows a ground broken only on evidence, never on a guess: one that cannot run (an error,
an unmet need) shows nothing (`gate.broken`), and the checks standing on it judge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance import api
from conformance.grounds.routed import (
    echo_passes,
    errors_pass,
    ids_pass,
    key_passes,
    labels_reach,
    rank_passes,
    stream_paced,
)
from conformance.server.features import DERENDER
from conformance.session import Session
from conformance.tito.semantics import check_spans, choices_of, ids_of, over_max_logprobs
from conformance.wire.exchange import stated_error

Probe = Callable[[Session], str | None]  # what is broken, or None


def _same_seed_twice(s: Session) -> str | None:
    payload = api.seeded(12, ignore_eos=True)
    first = ids_of(choices_of(api.generate(s, payload, what="seeded generate"))[0])
    second = ids_of(choices_of(api.generate(s, payload, what="seeded generate, again"))[0])
    if first != second:
        return f"the same seeded request gave {first} and then {second}"
    return None


def _minimal(s: Session) -> list[dict[str, Any]]:
    return s.remember(
        "foundation-minimal", lambda: choices_of(api.generate(s, api.body(4), what="minimal"))
    )


def _choices_listed(s: Session) -> str | None:
    """Every check reads `choices`; an answer without a list of choice objects is GEN-001's
    (a body that is no GenerateResponse), not a failure of each check's own field."""
    data = s.remember("foundation-body", lambda: api.generate(s, api.body(4), what="minimal"))
    choices = data.get("choices")
    if isinstance(choices, list) and choices and all(isinstance(c, dict) for c in choices):
        return None
    return f"a minimal generate's choices are {choices!r:.80}, not a list of choice objects"


def usage_broken(s: Session) -> str | None:
    """Checks that count a choice's tokens against something else (max_tokens, logprobs,
    spans, a stream, text mode) stand on an answer that agrees with itself: when token_ids
    and usage disagree, which one is wrong is GEN-RESP-003's to say, not each count's (and its
    check judges this answer too, so a check blocked on it names a requirement that fails)."""
    data = s.remember("foundation-body", lambda: api.generate(s, api.body(4), what="minimal"))
    answers = [("a minimal generate", data)]
    if "text-mode" in s.features.names():  # text mode's counts: the same tokens, as text too
        answers.append(("a minimal text-mode generate", text_answer(s)))
    for what, answer in answers:
        usage = answer.get("usage")
        choices = answer.get("choices")
        if not isinstance(usage, dict) or not isinstance(choices, list):
            continue  # its form is SCHEMA-GEN-001's
        returned = sum(len(c.get("token_ids") or []) for c in choices if isinstance(c, dict))
        if usage.get("completion_tokens") != returned:
            counted = usage.get("completion_tokens")
            return f"{what} returned {returned} tokens and counts {counted!r}"
    return None


def ids_disowned(s: Session) -> str | None:
    """A greedy answer's token_ids against two other readings of the same tokens: its own
    logprob entries and its stream. Where those two agree and the token_ids alone differ, the
    token_ids are what is wrong (GEN-RESP-001's, whose check judges this too), not each check
    that compares them with something else (a stop token, text mode, a stream, logprobs)."""
    payload = api.body(6, ignore_eos=True, logprobs=s.limits.logprobs(1))

    def read() -> tuple[list[Any], list[Any], list[int] | None]:
        whole = choices_of(api.generate(s, payload, what="greedy generate with logprobs"))[0]
        content = (whole.get("logprobs") or {}).get("content") or []
        entries = [e.get("token_id") for e in content if isinstance(e, dict)]
        part = api.stream(s, payload, what="the same, streamed").choices().get(0)
        return ids_of(whole), entries, part.token_ids if part else None

    ids, entries, streamed = s.remember("foundation-ids", read)
    if entries and entries == streamed and ids != entries:
        return (
            f"a greedy answer's token_ids {ids!r:.80} differ from its own logprob entries and "
            f"its stream, which agree on {entries!r:.80}"
        )
    return None


def finish_broken(s: Session) -> str | None:
    """GEN-RESP-002's ground (and judged by its check): every choice names one of the three
    reasons, and the one that says why it ended. A choice that ran to max_tokens under
    ignore_eos ended by length, whatever else the server gets wrong; one that names another
    reason there misnames them all, and each check that expects a reason (stop, length,
    abort) is blocked on it rather than failed."""
    for i, choice in enumerate(_minimal(s)):
        reason = choice.get("finish_reason")
        if reason not in ("stop", "length", "abort"):
            return f"choice {i} of a minimal generate has finish_reason {reason!r}"
    payload = api.body(MAX_TOKENS, ignore_eos=True)
    ran = s.remember("foundation-length", lambda: choices_of(api.generate(s, payload)))
    for i, choice in enumerate(ran):
        reason = choice.get("finish_reason")
        if len(ids_of(choice)) == MAX_TOKENS and reason != "length":
            return (
                f"choice {i} ran to max_tokens {MAX_TOKENS} under ignore_eos and says "
                f"finish_reason {reason!r}, not 'length'"
            )
    return None


MAX_TOKENS = 4  # finish_broken's run to a length


def _weight_lists(s: Session) -> str | None:
    for i, choice in enumerate(_minimal(s)):
        spans = choice.get("weight_versions")
        if not isinstance(spans, list):
            return f"choice {i} of a minimal generate has weight_versions {spans!r}"
    return None


def _spans_cover(s: Session) -> str | None:
    for i, choice in enumerate(_minimal(s)):
        spans = choice.get("weight_versions")
        if isinstance(spans, list):
            try:
                check_spans(spans, len(choice.get("token_ids") or []), f"choice {i}")
            except AssertionError as exc:
                return f"a minimal generate's spans: {exc}"
    return None


def _stream_lists(s: Session) -> str | None:
    for index, choice in _stream(s).choices().items():
        spans = choice.chunks[-1].get("weight_versions")
        if not isinstance(spans, list):
            return f"a minimal stream's choice {index} ends with weight_versions {spans!r}"
    return None


def _label_applied(s: Session) -> str | None:
    old = str(s.client.get("/weight_info", auth=False).json().get("weight_version"))
    new = f"tito-{s.session_id}-ground"
    s.client.post("/update_weight_version", {"new_version": new}, auth=False)
    try:
        data = api.generate(s, api.body(2, ignore_eos=True), what="generate after a label change")
    finally:
        s.client.post("/update_weight_version", {"new_version": old}, auth=False)
    labels = {
        span.get("version")
        for c in choices_of(data)
        for span in c.get("weight_versions") or []
        if isinstance(span, dict)
    }
    return None if labels == {new} else f"after /update_weight_version {new!r} spans carry {labels}"


def _stream(s: Session) -> api.Streamed:
    return s.remember("foundation-stream", lambda: api.stream(s, api.body(6, ignore_eos=True)))


def _stream_events(s: Session) -> str | None:
    """A minimal stream that cannot even be read as SSE (a JSON content type, an error
    status, garbage events) is STREAM-001's: every check that reads a stream stands on it."""
    try:
        chunks = _stream(s).chunks
    except AssertionError as exc:  # ServerBroke too: the answer is no readable stream
        return f"a minimal stream: {str(exc)[:200]}"
    if not chunks:
        return "a minimal stream carried no complete data event"
    return None


def _stream_done(s: Session) -> str | None:
    if _stream(s).chunks and not _stream(s).done:
        return "a minimal stream ended without data: [DONE]"
    return None


def _deltas(s: Session) -> str | None:
    whole = ids_of(choices_of(api.generate(s, api.body(6, ignore_eos=True)))[0])
    part = _stream(s).choices().get(0)
    joined = ids_of({"token_ids": part.token_ids}) if part else []
    if whole != joined:
        return f"a greedy stream's deltas join to {joined}, the whole answer is {whole}"
    return None


def text_answer(s: Session) -> dict[str, Any]:
    payload = api.body(8, ignore_eos=True) | {"output_mode": "text"}
    return s.remember("foundation-text-answer", lambda: api.generate(s, payload))


def _text_mode(s: Session) -> dict[str, Any]:
    return choices_of(text_answer(s))[0]


def text_broken(s: Session) -> str | None:
    """What is wrong with a minimal text-mode answer's text (TEXT-001's ground, and judged by
    its check, so a check blocked on it names a requirement that fails): no text, or a text
    that is not its tokens' (`text_disowned`)."""
    choices = text_answer(s).get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return f"a minimal text-mode answer has choices {choices!r:.80}, none to carry text"
    text = choices[0].get("text")
    if not isinstance(text, str):
        return f"a text-mode choice has text {text!r}"
    return text_disowned(s, choices[0])


def _text_stream(s: Session) -> str | None:
    """The joined text of the minimal text-mode request, streamed."""

    def read() -> str | None:
        payload = api.body(8, ignore_eos=True) | {"output_mode": "text"}
        part = api.stream(s, payload, what="text-mode stream").choices().get(0)
        return part.text if part else None

    return s.remember("foundation-text-stream", read)


def text_disowned(s: Session, choice: dict[str, Any]) -> str | None:
    """A greedy text-mode answer's text against two other readings of its tokens: its stream's
    deltas and the server's own derender of the same tokens. Where those agree and the text
    alone differs, the text is not its tokens' (TEXT-001's), not each check that compares it
    with something else (a stop string cut, a stream, the pipeline). Only where derender is
    served and the tokens mode gives the same tokens."""
    if not s.features.render:
        return None

    def derendered() -> str | None:
        data = api.generate(s, api.body(8, ignore_eos=True), what="the same in tokens mode")
        if ids_of(choices_of(data)[0]) != ids_of(choice):
            return None  # other tokens: TEXT-004's to judge, no reading of these
        asked = {"generate_responses": [data], "prompt_tokens": [len(api.PROMPT)]}
        reply = s.client.post(DERENDER, asked)
        answer = reply.json() if reply.status == 200 else None
        found = answer.get("choices") if isinstance(answer, dict) else None
        first = found[0] if isinstance(found, list) and found else None
        text = first.get("text") if isinstance(first, dict) else None
        return text if isinstance(text, str) else None  # another form: RENDER-002's

    other = s.remember("foundation-derendered", derendered)
    text = choice.get("text")
    if other is not None and other == _text_stream(s) and text != other:
        return (
            f"a greedy text-mode answer's text {text!r:.80} differs from its stream's and the "
            f"derender of its tokens, which agree on {other!r:.80}"
        )
    return None


def _text_deltas(s: Session) -> str | None:
    whole = _text_mode(s).get("text")
    joined = _text_stream(s)
    if isinstance(whole, str) and joined != whole:
        return f"a greedy text-mode stream's text deltas join to {joined!r}, not {whole!r}"
    return None


def _header_id(s: Session) -> str | None:
    rid = s.rid("foundation-header")
    data = api.generate(s, api.body(1), headers={"X-Request-Id": rid}, what="X-Request-Id")
    if data.get("request_id") not in (rid, f"generate-tokens-{rid}"):
        return f"X-Request-Id {rid!r} came back as {data.get('request_id')!r}"
    return None


def _logprob_count(s: Session) -> str | None:
    payload = api.body(4, ignore_eos=True, logprobs=0, top={"output_mode": "tokens"})
    for i, choice in enumerate(choices_of(api.generate(s, payload, what="logprobs 0"))):
        logprobs, tokens = choice.get("logprobs"), len(ids_of(choice))
        if logprobs is None and tokens:  # asked for and not there: every reader stands on it
            return f"choice {i}: logprobs {logprobs!r} for {tokens} tokens, although asked for"
        content = (logprobs or {}).get("content") if isinstance(logprobs, dict) else None
        if isinstance(content, list) and len(content) != tokens:
            return f"choice {i}: {len(content)} logprob entries for {tokens} tokens"
    return None


def _logprobs_limit(s: Session) -> str | None:
    above = over_max_logprobs(s)
    reply = s.client.post(api.GENERATE, api.body(2, logprobs=above))
    return f"logprobs {above} was accepted ({reply.status})" if reply.status < 300 else None


def _error_status(s: Session) -> str | None:
    """A server that rejects in its body but answers 200 fails every check that expects a 4xx
    on that one defect: the status is ERR-002's (code equal to the HTTP status), and its check
    judges this very request."""
    reply = s.client.post(api.GENERATE, api.invalid())
    code = stated_error(reply.status, reply.body)
    if code is None:
        return None
    return f"an invalid generate was answered HTTP {reply.status} with error.code {code}"


def _key_demanded(s: Session) -> str | None:
    reply = s.client.post(api.GENERATE, api.body(1), auth=False)
    return f"generate without the key answered {reply.status}" if reply.status != 401 else None


def _gated(s: Session) -> str | None:
    reply = s.client.post(api.GENERATE, api.body(2))
    return None if reply.status == 403 else f"generate answered {reply.status}, not 403"


def _abort_route(s: Session) -> str | None:
    """Where only the legacy route exists (vLLM 0.30/0.31 --tokens-only), the abort checks
    would each fail on the same 404, as on a route that answers every abort 500: ABORT-001
    owns it."""
    reply = s.client.post(api.ABORT, {"request_ids": []})
    return None if reply.status == 200 else f"POST {api.ABORT} of no ids answered {reply.status}"


PROBES: dict[str, Probe] = {
    "choices-listed": _choices_listed,
    "usage-counts": usage_broken,
    "abort-route": _abort_route,
    "gated": _gated,
    "key-demanded": _key_demanded,
    "key-passes": key_passes,
    "stream-paced": stream_paced,
    "error-status": _error_status,
    "errors-pass": errors_pass,
    "labels-reach": labels_reach,
    "rank-passes": rank_passes,
    "ids-pass": ids_pass,
    "echo-passes": echo_passes,
    "logprob-count": _logprob_count,
    "logprobs-limit": _logprobs_limit,
    "header-id": _header_id,
    "same-seed-twice": _same_seed_twice,
    "finish-reasons": finish_broken,
    "ids-agree": ids_disowned,
    "weight-lists": _weight_lists,
    "spans-cover": _spans_cover,
    "stream-lists": _stream_lists,
    "label-applied": _label_applied,
    "stream-events": _stream_events,
    "stream-done": _stream_done,
    "deltas": _deltas,
    "text-present": text_broken,
    "text-deltas": _text_deltas,
}
"""Every foundation probe, by the name a requirement's `ground` gives."""
