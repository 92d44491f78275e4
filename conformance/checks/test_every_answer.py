"""Rules of a single answer, judged again over every generate answer the run received.

Each requirement's own check asks for the answer that shows it best; these read every other
answer too (`conformance.tito.answers`: text mode as well as tokens, streams joined per choice), so
a server that keeps a rule in one kind of answer and breaks it in another still fails it, and
only it. Answers whose form is not the spec's are left to SCHEMA-*; the grounds are those of
each requirement's own check.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.grounds import TEXT_GROUND, builds_on
from conformance.outcomes import Absent, Blocked
from conformance.registry import checks
from conformance.requirements.model import Requirement
from conformance.session import Session
from conformance.tito import semantics
from conformance.tito.answers import Answer
from conformance.tito.semantics import as_bytes, fail
from conformance.tito.streamed import index_of

REQUIREMENTS: list[Requirement] = []
"""None of its own: each requirement these judge again is declared with its own check."""


def _text_form(content: list[dict[str, Any]]) -> bool:
    """Text mode's entries (a token string, no token_id), whatever the request or the echo
    says: which mode answered is GEN-REQ-010's and TEXT-007's to judge, not these rules'."""
    return all(
        isinstance(e.get("token"), str) and "token_id" not in e and not semantics.is_legacy(e)
        for e in content
    )


def _logprobs(
    s: Session, text: bool | None = None, current: bool = False
) -> Iterator[tuple[str, Answer, list[dict[str, Any]], list[Any], bool]]:
    """(where, answer, logprob entries, token ids, text form) of every choice of every answer
    that asked for logprobs and carries them (in text form, or the other; None: both), only
    in the current form with `current` (the older form is LOGP-001's)."""
    for answer in s.answers:
        if answer.logprobs is None:
            continue
        for choice in answer.choices:
            content = (choice.get("logprobs") or {}).get("content")
            if not isinstance(content, list) or not all(isinstance(e, dict) for e in content):
                continue
            if current and any(semantics.is_legacy(e) for e in content):
                continue
            form = _text_form(content)
            if text is None or form is text:
                where = f"{answer.what}, choice {choice.get('index')}"
                yield where, answer, content, semantics.ids_of(choice), form


def _judged(count: int) -> None:
    if not count:
        raise Absent("not applicable: no answer of the run was of the kind this rule reads")


@checks("GEN-REQ-008", after_all=True)
def test_every_answer_has_its_n_choices(tito: Session) -> None:
    judged = 0
    for answer in (a for a in tito.answers if not a.streamed):
        judged += 1
        got = sorted(index_of(c.get("index", -1)) for c in answer.choices)
        if got != list(range(answer.n)):
            if answer.text_mode:  # text mode's answers may be broken as a whole: TEXT-001's
                builds_on(tito, TEXT_GROUND)
            fail(f"{answer.what}: n {answer.n} was asked, the choices are indexed {got}")
    _judged(judged)


@checks("LOGP-002", after_all=True, builds_on=("GEN-RESP-003",))
def test_every_answer_has_an_entry_per_token(tito: Session) -> None:
    judged = 0
    for where, answer, content, ids, _ in _logprobs(tito):
        judged += 1
        if answer.streamed and len(content) != len(ids):  # the deltas may have lost tokens:
            builds_on(tito, "STREAM-003")  # STREAM-003's, where its probe shows them lost
        semantics.check_count(content, ids, where)
    _judged(judged)


@checks("LOGP-003", after_all=True, builds_on=("GEN-RESP-001",))
def test_every_answer_puts_the_sampled_token_first(tito: Session) -> None:
    judged = 0
    for where, _, content, ids, text in _logprobs(tito, current=True):
        if not all(e.get("top_logprobs") for e in content):
            continue  # no alternatives listed: how many there are is LOGP-008's
        judged += 1
        if not text:
            semantics.check_sampled_first(content, ids, where)
            continue
        for i, entry in enumerate(content):
            top = entry.get("top_logprobs") or []
            first = top[0] if top and isinstance(top[0], dict) else {}
            if (first.get("token"), first.get("logprob")) != (
                entry.get("token"),
                entry.get("logprob"),
            ):
                fail(
                    f"{where}: entry {i}: the sampled token {entry.get('token')!r} "
                    f"(logprob {entry.get('logprob')}) is not first in top_logprobs (first is "
                    f"{first.get('token')!r}, logprob {first.get('logprob')})"
                )
    _judged(judged)


@checks("LOGP-006", after_all=True)
def test_every_answer_ranks_its_alternatives(tito: Session) -> None:
    judged = 0
    for where, answer, content, _, _ in _logprobs(tito, text=False, current=True):
        try:
            semantics.check_finite(content, where)
        except AssertionError as exc:  # ranks cannot be read from such values
            raise Blocked("LOGP-007", str(exc)) from exc
        judged += 1
        semantics.check_ranks(content, where, answer.logprobs or 0)
    _judged(judged)


@checks("LOGP-007", after_all=True)
def test_every_answer_has_finite_logprobs(tito: Session) -> None:
    judged = 0
    for where, _, content, _, _ in _logprobs(tito):
        judged += 1
        semantics.check_finite(content, where)
    _judged(judged)


def _text_items(s: Session) -> Iterator[tuple[str, dict[str, Any]]]:
    for where, _, content, _, _ in _logprobs(s, text=True):
        for i, entry in enumerate(content):
            tops = entry.get("top_logprobs")
            for j, item in enumerate([entry, *(tops if isinstance(tops, list) else [])]):
                if isinstance(item, dict):
                    yield f"{where} entry {i}" + (f" top {j - 1}" if j else ""), item


@checks("TEXT-003", after_all=True)
def test_every_text_answer_has_its_bytes(tito: Session) -> None:
    judged = 0
    for where, item in _text_items(tito):
        token, raw = item.get("token"), item.get("bytes")
        if not isinstance(token, str) or raw is None or "\ufffd" in token:
            continue  # the item's keys are TEXT-003's own check's; a placeholder has none
        judged += 1
        if as_bytes(raw) != token.encode():
            fail(f"{where}: bytes {raw} are not the UTF-8 of token {token!r}")
    _judged(judged)


@checks("WV-002", after_all=True, needs=("generate",), builds_on=("GEN-RESP-003",))
def test_every_answer_covers_its_tokens(tito: Session) -> None:
    judged = 0
    for answer in (a for a in tito.answers if not a.streamed):
        for choice in answer.choices:
            # an output with no tokens is WV-006's
            if isinstance(choice.get("weight_versions"), list) and choice.get("token_ids"):
                judged += 1
                where = f"{answer.what}, choice {choice.get('index')}"
                semantics.check_spans(
                    choice["weight_versions"], len(choice.get("token_ids") or []), where
                )
    _judged(judged)


@checks("WV-004", after_all=True, needs=("generate",), builds_on=("STREAM-001", "STREAM-003"))
def test_every_stream_covers_its_tokens(tito: Session) -> None:
    judged = 0
    for answer in (a for a in tito.answers if a.streamed):
        for choice in answer.choices:
            # an output with no tokens is WV-006's
            if isinstance(choice.get("weight_versions"), list) and choice.get("token_ids"):
                judged += 1
                where = f"{answer.what}, stream choice {choice.get('index')}"
                try:
                    semantics.check_spans(
                        choice["weight_versions"], len(choice.get("token_ids") or []), where
                    )
                except AssertionError:
                    builds_on(tito, "WV-002")  # wrong non-streamed too: WV-002's
                    raise
    _judged(judged)


@checks("GEN-RESP-004", after_all=True, needs=("generate",))
def test_every_answer_returns_the_id_sent(tito: Session) -> None:
    """Each chunk of a stream (its usage chunk too) says one id; each answer to a body
    request_id sent without a header says it behind the prefix (a header's, or both, are
    GEN-RESP-005's and -006's)."""
    judged = 0
    for answer in tito.answers:
        if len(set(map(str, answer.ids))) > 1:  # one request, one id
            fail(f"{answer.what}: the chunks of one stream say request ids {list(answer.ids)}")
        sent = answer.body_id
        if sent is None or answer.header_id:
            continue
        judged += 1
        expected = f"generate-tokens-{sent}"
        wrong = sorted({str(i) for i in answer.ids if i != expected})
        if wrong:
            fail(f"{answer.what}: sent request id {sent!r}, the answer says {wrong} ({expected!r})")
    _judged(judged)


@checks("TEXT-007", after_all=True, needs=("text-mode",))
def test_every_answer_echoes_its_mode(tito: Session) -> None:
    """Each body, and each chunk of a stream, says the output_mode its request sent (one that
    says none is TEXT-005's or TEXT-006's)."""
    judged = 0
    for answer in tito.answers:
        sent = answer.request.get("output_mode")
        if sent not in ("tokens", "text"):
            continue  # none sent (the default is GEN-REQ-010's), or a release's own mode
        judged += 1
        wrong = sorted({str(m) for m in answer.modes if m is not None and m != sent})
        if wrong:
            fail(f"{answer.what}: sent output_mode {sent!r}, the answer says {wrong}")
    _judged(judged)


@checks("TEXT-006", after_all=True, needs=("generate",))
def test_every_stream_echoes_one_mode(tito: Session) -> None:
    """Each chunk of a stream, its usage chunk included, echoes the one mode of its request
    (whichever the default is, and whether or not text mode is served)."""
    judged = 0
    for answer in (a for a in tito.answers if a.streamed):
        judged += 1
        said = sorted({str(m) for m in answer.modes if m is not None})
        if len(said) > 1:
            fail(f"{answer.what}: the chunks of one stream echo output_mode {said}")
    _judged(judged)


@checks("LOGP-008", after_all=True, needs=("generate",))
def test_every_answer_lists_its_alternatives(tito: Session) -> None:
    judged = 0
    for where, answer, content, _, _ in _logprobs(tito, current=True):
        judged += 1
        k = max(answer.logprobs or 0, 1)
        for i, entry in enumerate(content):
            top = entry.get("top_logprobs")
            if not isinstance(top, list) or len(top) != k:
                count = len(top) if isinstance(top, list) else top
                fail(f"{where}: logprobs {answer.logprobs}: entry {i} has {count} top_logprobs")
    _judged(judged)


@checks("WV-008", after_all=True, needs=("generate",))
def test_every_answer_carries_a_label_it_was_given(tito: Session) -> None:
    """Each span's label is "default" on a server without the dev endpoints, where nothing
    can change it. (With them, another client may set any label under any answer, the fuzz
    folded in among them: WV-008's own check judges the label there.)"""
    if tito.features.dev_mode:
        raise Absent("not applicable: the dev endpoints let any client change the label")
    judged = 0
    for answer in tito.answers:
        for choice in answer.choices:
            spans = choice.get("weight_versions")
            for span in spans if isinstance(spans, list) else []:
                label = span.get("version") if isinstance(span, dict) else None
                if not isinstance(label, str):
                    continue  # a span's form is WV-002's and SCHEMA-*'s
                judged += 1
                if label != "default":
                    fail(
                        f"{answer.what}, choice {choice.get('index')}: a span is labelled "
                        f"{label!r} on a server whose label nothing can change from 'default'"
                    )
    _judged(judged)


def _named(value: Any) -> list[Any]:
    return [value] if isinstance(value, (str, int)) else list(value or [])


@checks("STOP-001", after_all=True, needs=("generate",))
def test_every_stop_reason_was_asked_for(tito: Session) -> None:
    """A choice's stop_reason is the stop string or stop token id its request named (one
    that ended another way says null: STOP-003 to STOP-005)."""
    judged = 0
    for answer in tito.answers:
        named = _named(answer.params.get("stop")) + _named(answer.params.get("stop_token_ids"))
        for choice in answer.choices:
            reason = choice.get("stop_reason")
            if reason is None or choice.get("finish_reason") != "stop":
                continue
            ids = choice.get("token_ids") or [None]
            if reason == ids[-1] and reason not in named:
                continue  # the id EOS ended on: that it is not null is STOP-003's
            judged += 1
            if reason not in named:
                fail(
                    f"{answer.what}, choice {choice.get('index')}: stop_reason {reason!r} is "
                    f"no stop string or stop token id the request named ({named})"
                )
    _judged(judged)
