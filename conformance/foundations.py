"""What other checks build on, established once per run.

Many checks compare two answers (the same seed twice, a stream against its whole answer, text
against text) or read a field another requirement owns. When that ground is broken, the
comparison says nothing about the check's own requirement: the check is blocked, naming the
requirement that owns the ground, so a server with one defect fails one requirement. A check
names its ground with `@checks(..., builds_on=(...))`; the collector asks here before it runs.
A foundation blocks only when its own probe shows it broken on this server, never on a guess:
a probe that cannot run (an error, an unmet need) blocks nothing, and the check judges.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from conformance import api
from conformance.registry import grounds_of
from conformance.requirements import all_requirements, by_id
from conformance.server.features import DERENDER
from conformance.session import BLOCKED_PREFIX, Session
from conformance.tito.semantics import check_spans, choices_of, ids_of, over_max_logprobs
from conformance.wire import Client, is_event_stream
from conformance.wire.exchange import stated_error

Probe = Callable[[Session], str | None]  # what is broken, or None
UNREADABLE_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)
"""What reading an answer of the wrong form raises (a string where a list belongs, ...)."""
UNREADABLE = "its answer could not be read:"
"""How a ground's probe that tripped on such an answer says so: the answer's form, which the
SCHEMA-* checks judge, is what is broken (they are never blocked on it)."""


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


GROUND = "GEN-001"
"""What every check that reads a generate answer stands on (see `implied`)."""
TEXT_GROUND = "TEXT-001"
"""What every check that reads a text-mode answer stands on."""


def implied(s: Session, deciding: tuple[str, ...]) -> tuple[str, ...]:
    """The ground every check stands on without naming it: a generate answer with choices, and
    for a check of a text-mode answer, text on its choices (TEXT-001). Only where generate
    works, and not for the checks that judge that ground themselves (nor for a check whose
    requirement demands an error status: it reads no answer)."""
    if s.features.generate != "enabled" or {GROUND, "SCHEMA-GEN-001"} & set(deciding):
        return ()
    grounds = [GROUND]
    reqs = [by_id()[rid] for rid in deciding]
    reads_text = any("text-mode" in r.needs and r.expected_status is None for r in reqs)
    if reads_text and TEXT_GROUND not in deciding and "text-mode" in s.features.names():
        grounds.append(TEXT_GROUND)
    return tuple(grounds)


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
        content = (choice.get("logprobs") or {}).get("content")
        if isinstance(content, list) and len(content) != len(ids_of(choice)):
            return f"choice {i}: {len(content)} logprob entries for {len(ids_of(choice))} tokens"
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


def _key_passes(s: Session) -> str | None:
    """Behind a router: the client's key reaches the engines on every guarded path (a router
    that drops it locks the client out of aborts and renders: ROUTER-010's, not each check's)."""
    for url in s.features.engines[:1]:
        body: dict[str, list[str]] = {"request_ids": []}
        if (
            s.client.post(api.ABORT, body).status == 401
            and s.direct(url).post(api.ABORT, body).status != 401
        ):
            return f"{api.ABORT} with the API key is a 401 through the router, not at {url}"
    return None


def _key_demanded(s: Session) -> str | None:
    reply = s.client.post(api.GENERATE, api.body(1), auth=False)
    return f"generate without the key answered {reply.status}" if reply.status != 401 else None


def _errors_pass(s: Session) -> str | None:
    """Behind a router: an engine's 400 reaches the client as the engine answered it (its
    status, a JSON body). A router that turns it into a 502 or plain text answers every
    rejection so (ROUTER-009's): what the client sees of errors is the router's, and each
    requirement about an error answer is blocked on it rather than failed."""
    for url in s.features.engines[:1]:
        for what, sent in REJECTED:
            direct = s.direct(url).post(api.GENERATE, **sent)
            if direct.status != 400:
                continue  # the engine does not reject it so: nothing to pass through
            routed = s.client.post(api.GENERATE, **sent)
            media = routed.headers.get("content-type") or ""
            if routed.status != direct.status or "json" not in media:
                return (
                    f"{what} is HTTP {direct.status} from the engine {url}, "
                    f"HTTP {routed.status} ({media or 'no content type'}) through the router"
                )
    return None


REJECTED: tuple[tuple[str, dict[str, Any]], ...] = (
    ("an invalid generate", {"body": api.invalid()}),
    ("a generate without token_ids", {"body": {"sampling_params": {"max_tokens": 1}}}),
    (
        "a generate sent as text/plain",
        {"content": api.dumps_body(api.body(1)), "headers": {"Content-Type": "text/plain"}},
    ),
)
"""Requests every engine rejects with a 400 (`Client.post` arguments): wrong values, a missing
field and a non-JSON Content-Type, the last two of which a router that parses bodies into its
own types rejects itself (vllm-router 0.1.17: a 422 and a 415, in plain text)."""


def _labels_reach(s: Session) -> str | None:
    """Behind a router: a label set through it reaches every engine's /weight_info (one that
    sends it to one engine labels only that one's spans: ROUTER-011's, not each label
    requirement's). Put back on every engine after."""
    urls = list(s.features.engines)
    engines = [s.direct(url) for url in urls]

    def label(engine: Client) -> str:
        return str(engine.get("/weight_info", auth=False).json().get("weight_version"))

    if not engines:
        return None
    old = [label(e) for e in engines]
    new = f"tito-{s.session_id}-reach"
    try:
        reply = s.client.post("/update_weight_version", {"new_version": new}, auth=False)
        if reply.status != 200:
            return None  # not served through it: WV-007 judges that
        missed = [url for url, e in zip(urls, engines, strict=True) if label(e) != new]
    finally:
        for engine, was in zip(engines, old, strict=True):
            engine.post("/update_weight_version", {"new_version": was}, auth=False)
    if missed:
        return (
            f"/update_weight_version {new!r} through the router reached "
            f"{len(urls) - len(missed)} of {len(urls)} engines (not {', '.join(missed)})"
        )
    return None


def _rank_passes(s: Session) -> str | None:
    """Behind a router: a rank no engine has (which the engine rejects with 400 when asked
    directly) is still a 400 through it; a router that drops the header answers it (ROUTER-005's,
    not each rank requirement's)."""
    rank = {"X-data-parallel-rank": "1000000"}
    for url in s.features.engines[:1]:
        if s.direct(url).post(api.GENERATE, api.body(1), headers=rank).status != 400:
            return None  # the engine takes it: nothing to pass on
        routed = s.client.post(api.GENERATE, api.body(1), headers=rank)
        if routed.status != 400:
            return f"X-data-parallel-rank 1000000: HTTP 400 from {url}, {routed.status} routed"
    return None


def _ids_pass(s: Session) -> str | None:
    """Behind a router: an X-Request-Id comes back through it as the engine echoes it (a router
    that renames requests: ROUTER-006's, not each request-id requirement's)."""
    for url in s.features.engines[:1]:
        rid = s.rid("foundation-routed-id")
        answers = [
            client.post(api.GENERATE, api.body(1), headers={"X-Request-Id": rid})
            for client in (s.direct(url), s.client)
        ]
        if any(a.status != 200 for a in answers):
            return None
        direct, routed = (a.json().get("request_id") for a in answers)
        if direct != routed:
            return f"X-Request-Id {rid!r}: {direct!r} from {url}, {routed!r} through the router"
    return None


def _echo_passes(s: Session) -> str | None:
    """Behind a router: the output_mode the engine echoes comes back through it (ROUTER-007's,
    not each echo requirement's)."""
    body = api.body(1, top={"output_mode": "tokens"})
    for url in s.features.engines[:1]:
        direct = s.direct(url).post(api.GENERATE, body)
        if direct.status != 200 or direct.json().get("output_mode") != "tokens":
            return None  # the engine echoes nothing to pass on
        routed = s.client.post(api.GENERATE, body)
        if routed.status == 200 and routed.json().get("output_mode") != "tokens":
            return f"output_mode 'tokens' is echoed by {url}, not through the router"
    return None


@cache
def routed_duties() -> dict[str, tuple[str, ...]]:
    """Behind a router, the router's duty each requirement's evidence passes through (read
    when first asked: the catalogue is loaded then, never at import)."""
    return {
        "ROUTER-001": ("ABORT-002", "ABORT-003", "ABORT-004"),
        "ROUTER-002": ("ABORT-007",),
        "ROUTER-005": ("DP-001", "DP-002", "DP-003"),
        "ROUTER-006": ("GEN-RESP-004", "GEN-RESP-005", "GEN-RESP-006"),
        "ROUTER-007": ("TEXT-005", "TEXT-006", "TEXT-007", "GEN-REQ-010"),
        "ROUTER-009": tuple(
            r.id
            for r in all_requirements()
            if r.id == "ERR-002"
            or ((r.expected_status or 0) >= 400 and not r.id.startswith("ROUTER-"))
        ),
        "ROUTER-011": ("WV-007", "WV-009"),
    }


"""Behind a router, the router's duty each requirement's evidence passes through: an abort
that reaches no engine ends no request (ROUTER-001, -002), a rank header, request id or echo
the router drops is no engine's doing (ROUTER-005, -006, -007), an engine's rejection the
router rewrites is no engine's answer (ROUTER-009), a label set on one engine labels no fleet
(ROUTER-011). Where the run knows its engines and the duty fails, a failure of these is the
duty's: blocked on it (the suite's checks through `routed`, the folded-in fuzz's findings
through `fuzz.merge`). Where the duty holds, they judge as on one server."""


def routed(s: Session, ids: tuple[str, ...]) -> tuple[str, ...]:
    """The router duties `ids` stand on (`routed_duties`), where the run knows its engines."""
    if not s.features.engines:
        return ()
    return routed_grounds(ids)


def routed_grounds(ids: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(d for d, over in routed_duties().items() if set(ids) & set(over))


def _gated(s: Session) -> str | None:
    reply = s.client.post(api.GENERATE, api.body(2))
    return None if reply.status == 403 else f"generate answered {reply.status}, not 403"


def _abort_route(s: Session) -> str | None:
    """Where only the legacy route exists (vLLM 0.30/0.31 --tokens-only), the abort checks
    would each fail on the same 404, as on a route that answers every abort 500: ABORT-001
    owns it."""
    reply = s.client.post(api.ABORT, {"request_ids": []})
    return None if reply.status == 200 else f"POST {api.ABORT} of no ids answered {reply.status}"


SPREAD_S = 0.3  # the least a routed stream must last for its pacing to be judged
BUFFERED = 0.25  # a routed stream whose first token comes in its last quarter is held
GROW = 8  # each longer try asks for this many times more tokens


@dataclass(frozen=True)
class Pacing:
    """A stream straight from an engine against the same through the router: `held` says how
    the router held it back, `unknown` why that cannot be told (None: neither)."""

    held: str | None = None
    unknown: str | None = None


def _timed(client: Client, body: dict[str, Any], deadline: float) -> tuple[float, float, int]:
    """A stream's first token chunk and its end, in seconds from sending, and its tokens."""
    started = time.monotonic()
    first: float | None = None
    tokens = 0
    with client.stream(api.GENERATE, {**body, "stream": True}, deadline=deadline) as st:
        if st.status != 200 or not is_event_stream(st.headers):
            raise AssertionError(f"a stream from {client.base_url} answered {st.status}")
        for data in st.events():
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            count = sum(len(c.get("token_ids") or []) for c in choices_of(chunk))
            tokens += count
            if first is None and count:
                first = time.monotonic() - started
    ended = time.monotonic() - started
    return (first if first is not None else ended), ended, tokens


def stream_pacing(s: Session) -> Pacing:
    """ROUTER-008's evidence (its check and its ground): a stream through the router, grown
    until it lasts SPREAD_S and four times the engine's own first token, is held back when
    its first token chunk comes only in the last quarter of it. (Judged on the routed stream
    alone: two engines, or one engine twice, differ in pace far more than a hop does.)"""

    def measure() -> Pacing:
        engine = s.direct(s.features.engines[0])
        deadline = s.config.stream_deadline
        direct_first, _, _ = _timed(engine, api.body(2, ignore_eos=True), deadline)
        room = s.limits.room(len(api.PROMPT)) or 4096
        tokens, first, end = 16, 0.0, 0.0
        while True:
            first, end, _ = _timed(s.client, api.body(tokens, ignore_eos=True), deadline)
            if (end >= SPREAD_S and end >= 4 * direct_first) or tokens >= room:
                break
            tokens = min(room, tokens * GROW)
        if end < SPREAD_S or end < 4 * direct_first:
            return Pacing(
                unknown=f"a stream of {tokens} tokens through the router lasts {end * 1000:.0f} "
                f"ms, too little beside the engine's first token ({direct_first * 1000:.0f} ms)"
            )
        if first >= (1 - BUFFERED) * end:
            return Pacing(
                held=f"a stream of {tokens} tokens reached the client through the router all "
                f"at once: its first token chunk at {first * 1000:.0f} ms, its end at "
                f"{end * 1000:.0f} ms (straight from {engine.base_url} the first token takes "
                f"{direct_first * 1000:.0f} ms)"
            )
        return Pacing()

    return s.remember("foundation-pacing", measure)


def _stream_paced(s: Session) -> str | None:
    return stream_pacing(s).held if s.features.engines else None


PROBES: dict[str, Probe] = {
    "choices-listed": _choices_listed,
    "usage-counts": usage_broken,
    "abort-route": _abort_route,
    "gated": _gated,
    "key-demanded": _key_demanded,
    "key-passes": _key_passes,
    "stream-paced": _stream_paced,
    "error-status": _error_status,
    "errors-pass": _errors_pass,
    "labels-reach": _labels_reach,
    "rank-passes": _rank_passes,
    "ids-pass": _ids_pass,
    "echo-passes": _echo_passes,
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


@cache
def foundations() -> dict[str, Probe]:
    """Requirement ID -> the probe that shows its ground broken."""
    return {r.id: PROBES[r.ground] for r in all_requirements() if r.ground}


def broken(s: Session, rid: str) -> str | None:
    """What the probe of `rid` found broken on this server (None: sound, or not knowable)."""

    def probe() -> str | None:
        try:
            return foundations()[rid](s)
        except (AssertionError, pytest.skip.Exception, pytest.fail.Exception):
            return None  # the probe could not run: nothing is shown broken
        except UNREADABLE_ERRORS as exc:
            # the answer could not even be read as the ground needs (text deltas that are no
            # strings, spans that are no objects): the ground is broken, and its own check
            # says how; what builds on it is blocked instead of breaking on it
            return f"{UNREADABLE} {type(exc).__name__}: {exc}"

    return s.remember(_probed(rid), probe)


def _probed(rid: str) -> str:
    """Where the run keeps what the probe of `rid` found (`Session.remember`)."""
    return f"foundation:{rid}"


PACED_GROUND = "ROUTER-008"
"""Behind a router, what every check that acts on a stream in flight stands on: it is paced."""


def unpaced_blocks(s: Session) -> None:
    """Behind a router an earlier check showed holding streams back (PACED_GROUND's probe), a
    check about to act on a stream in flight is blocked before it spends its attempts (some
    15 s each): its failure would be blocked on the same ground afterwards. Nothing is probed
    here; a run that has not shown the ground broken acts as before."""
    if s.config.engines and s.known(_probed(PACED_GROUND)):
        builds_on(s, PACED_GROUND)


def builds_on(s: Session, *rids: str) -> None:
    """Block the running check if any ground it names is broken. Called before a check runs
    (its declared `builds_on`) and by a check that finds its evidence unusable: if the ground is
    sound there, the check goes on to judge, and fails on its own evidence."""
    for rid in rids:
        found = _deepest(s, rid, frozenset())
        if found is not None:
            pytest.skip(f"{BLOCKED_PREFIX} {found[1]} ({found[0]})")


def _deepest(s: Session, rid: str, seen: frozenset[str]) -> tuple[str, str] | None:
    """`rid` and what is broken under it, or, when its own probe trips on a broken ground of
    its own checks, that ground (deepest first): a blocked check names a requirement that
    fails, not one that is itself blocked."""
    if rid not in foundations():
        return None
    why = broken(s, rid)
    if why is None:
        return None
    for under in (*grounds_of(rid), *routed(s, (rid,))):
        if under not in seen and under != rid:
            found = _deepest(s, under, seen | {rid})
            if found is not None:
                return found
    return rid, why
