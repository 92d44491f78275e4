"""The rules of a single answer, one function each, read by every judge of many answers.

`checks/test_every_answer.py` judges them over every answer a suite run received, and
`conformance.load` over every answer a load run received: one copy of each rule. A rule reads
one `Answer` (a body, or a stream joined per choice), returns how many items it judged (0: the
answer is not of the kind it reads) and raises AssertionError (`semantics.fail`) on the first
item that breaks it. What a rule builds on (a ground, another requirement) is its caller's: the
rule only says what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from conformance.tito import semantics
from conformance.tito.answers import Answer
from conformance.tito.semantics import as_bytes, fail
from conformance.tito.streamed import index_of

Rule = Callable[[Answer], int]


def text_form(content: list[dict[str, Any]]) -> bool:
    """Text mode's entries (a token string, no token_id), whatever the request or the echo
    says: which mode answered is GEN-REQ-010's and TEXT-007's to judge, not these rules'."""
    return all(
        isinstance(e.get("token"), str) and "token_id" not in e and not semantics.is_legacy(e)
        for e in content
    )


def logprob_choices(
    answer: Answer, text: bool | None = None, current: bool = False
) -> Iterator[tuple[str, list[dict[str, Any]], list[Any], bool]]:
    """(where, logprob entries, token ids, text form) of every choice of an answer that asked
    for logprobs and carries them (in text form, or the other; None: both), only in the
    current form with `current` (the older form is LOGP-001's)."""
    if answer.logprobs is None:
        return
    for choice in answer.choices:
        content = (choice.get("logprobs") or {}).get("content")
        if not isinstance(content, list) or not all(isinstance(e, dict) for e in content):
            continue
        if current and any(semantics.is_legacy(e) for e in content):
            continue
        form = text_form(content)
        if text is None or form is text:
            where = f"{answer.what}, choice {choice.get('index')}"
            yield where, content, semantics.ids_of(choice), form


def n_choices(answer: Answer) -> int:
    """GEN-REQ-008: a non-streamed answer has its n choices, indexed 0..n-1."""
    if answer.streamed:
        return 0
    got = sorted(index_of(c.get("index", -1)) for c in answer.choices)
    if got != list(range(answer.n)):
        fail(f"{answer.what}: n {answer.n} was asked, the choices are indexed {got}")
    return 1


def entry_per_token(answer: Answer) -> int:
    """LOGP-002: one logprob entry per token."""
    judged = 0
    for where, content, ids, _ in logprob_choices(answer):
        judged += 1
        semantics.check_count(content, ids, where)
    return judged


def sampled_first(answer: Answer) -> int:
    """LOGP-003: the sampled token is the first of top_logprobs (tokens and text form)."""
    judged = 0
    for where, content, ids, text in logprob_choices(answer, current=True):
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
    return judged


class Unreadable(AssertionError):
    """The values a rule reads break another rule first (ranks of logprobs that are not
    finite): that rule's failure, never this one's."""


def ranked(answer: Answer) -> int:
    """LOGP-006: ranks agree with the logprobs; `Unreadable` where a choice's logprobs are
    not finite (LOGP-007's)."""
    judged = 0
    for where, content, _, _ in logprob_choices(answer, text=False, current=True):
        try:
            semantics.check_finite(content, where)
        except AssertionError as exc:  # ranks cannot be read from such values
            raise Unreadable(str(exc)) from exc
        judged += 1
        semantics.check_ranks(content, where, answer.logprobs or 0)
    return judged


def finite(answer: Answer, text: bool | None = None, current: bool = False) -> int:
    """LOGP-007: every logprob is finite and <= 0."""
    judged = 0
    for where, content, _, _ in logprob_choices(answer, text, current):
        judged += 1
        semantics.check_finite(content, where)
    return judged


def text_bytes(answer: Answer) -> int:
    """TEXT-003: a text-mode item's bytes are the UTF-8 of its token."""
    judged = 0
    for where, content, _, _ in logprob_choices(answer, text=True):
        for i, entry in enumerate(content):
            tops = entry.get("top_logprobs")
            for j, item in enumerate([entry, *(tops if isinstance(tops, list) else [])]):
                if not isinstance(item, dict):
                    continue
                token, raw = item.get("token"), item.get("bytes")
                if not isinstance(token, str) or raw is None or "\ufffd" in token:
                    continue  # the item's keys are TEXT-003's own check's
                judged += 1
                if as_bytes(raw) != token.encode():
                    at = f"{where} entry {i}" + (f" top {j - 1}" if j else "")
                    fail(f"{at}: bytes {raw} are not the UTF-8 of token {token!r}")
    return judged


def covering_spans(answer: Answer) -> int:
    """WV-002 (a body) and WV-004 (a stream): the spans cover the choice's tokens, half-open
    and contiguous. An output with no tokens is WV-006's."""
    judged = 0
    for choice in answer.choices:
        if isinstance(choice.get("weight_versions"), list) and choice.get("token_ids"):
            judged += 1
            kind = "stream choice" if answer.streamed else "choice"
            where = f"{answer.what}, {kind} {choice.get('index')}"
            semantics.check_spans(
                choice["weight_versions"], len(choice.get("token_ids") or []), where
            )
    return judged


def id_sent(answer: Answer) -> int:
    """GEN-RESP-004: one id per stream; a body request_id sent without a header comes back
    behind the prefix."""
    if len(set(map(str, answer.ids))) > 1:  # one request, one id
        fail(f"{answer.what}: the chunks of one stream say request ids {list(answer.ids)}")
    sent = answer.body_id
    if sent is None or answer.header_id:
        return 0
    expected = f"generate-tokens-{sent}"
    wrong = sorted({str(i) for i in answer.ids if i != expected})
    if wrong:
        fail(f"{answer.what}: sent request id {sent!r}, the answer says {wrong} ({expected!r})")
    return 1


def mode_echoed(answer: Answer) -> int:
    """TEXT-007: each body and chunk says the output_mode its request sent."""
    sent = answer.request.get("output_mode")
    if sent not in ("tokens", "text"):
        return 0  # none sent (the default is GEN-REQ-010's), or a release's own mode
    wrong = sorted({str(m) for m in answer.modes if m is not None and m != sent})
    if wrong:
        fail(f"{answer.what}: sent output_mode {sent!r}, the answer says {wrong}")
    return 1


def one_mode(answer: Answer) -> int:
    """TEXT-006: the chunks of one stream echo one mode."""
    if not answer.streamed:
        return 0
    said = sorted({str(m) for m in answer.modes if m is not None})
    if len(said) > 1:
        fail(f"{answer.what}: the chunks of one stream echo output_mode {said}")
    return 1


def alternatives(answer: Answer) -> int:
    """LOGP-008: top_logprobs lists max(k, 1) alternatives."""
    judged = 0
    for where, content, _, _ in logprob_choices(answer, current=True):
        judged += 1
        k = max(answer.logprobs or 0, 1)
        for i, entry in enumerate(content):
            top = entry.get("top_logprobs")
            if not isinstance(top, list) or len(top) != k:
                count = len(top) if isinstance(top, list) else top
                fail(f"{where}: logprobs {answer.logprobs}: entry {i} has {count} top_logprobs")
    return judged


def default_label(answer: Answer) -> int:
    """WV-008 where nothing can change the label: every span says "default"."""
    judged = 0
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
    return judged


def _named(value: Any) -> list[Any]:
    return [value] if isinstance(value, (str, int)) else list(value or [])


def stop_reason_asked(answer: Answer) -> int:
    """STOP-001: a stop_reason is a stop string or stop token id the request named."""
    judged = 0
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
    return judged
