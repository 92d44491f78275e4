"""Rules of a single answer, judged again over every generate answer the run received.

Each requirement's own check asks for the answer that shows it best; these read every other
answer too (`conformance.tito.answers`: text mode as well as tokens, streams joined per choice), so
a server that keeps a rule in one kind of answer and breaks it in another still fails it, and
only it. The rules themselves are `conformance.tito.rules`' (the load run judges every
answer by the same ones). Answers whose form is not the spec's are left to SCHEMA-*; the
grounds are those of each requirement's own check.
"""

from __future__ import annotations

from conformance.grounds import TEXT_GROUND, builds_on
from conformance.outcomes import Absent, Blocked
from conformance.registry import checks
from conformance.requirements.model import Requirement
from conformance.session import Session
from conformance.tito import rules

REQUIREMENTS: list[Requirement] = []
"""None of its own: each requirement these judge again is declared with its own check."""


def _judged(count: int) -> None:
    if not count:
        raise Absent("not applicable: no answer of the run was of the kind this rule reads")


@checks("GEN-REQ-008", after_all=True)
def test_every_answer_has_its_n_choices(tito: Session) -> None:
    judged = 0
    for answer in tito.answers:
        try:
            judged += rules.n_choices(answer)
        except AssertionError:
            if answer.text_mode:  # text mode's answers may be broken as a whole: TEXT-001's
                builds_on(tito, TEXT_GROUND)
            raise
    _judged(judged)


@checks("LOGP-002", after_all=True, builds_on=("GEN-RESP-003",))
def test_every_answer_has_an_entry_per_token(tito: Session) -> None:
    judged = 0
    for answer in tito.answers:
        try:
            judged += rules.entry_per_token(answer)
        except AssertionError:
            if answer.streamed:  # the deltas may have lost tokens: STREAM-003's, where its
                builds_on(tito, "STREAM-003")  # probe shows them lost
            raise
    _judged(judged)


@checks("LOGP-003", after_all=True, builds_on=("GEN-RESP-001",))
def test_every_answer_puts_the_sampled_token_first(tito: Session) -> None:
    _judged(sum(rules.sampled_first(answer) for answer in tito.answers))


@checks("LOGP-006", after_all=True)
def test_every_answer_ranks_its_alternatives(tito: Session) -> None:
    judged = 0
    for answer in tito.answers:
        try:
            judged += rules.ranked(answer)
        except rules.Unreadable as exc:
            raise Blocked("LOGP-007", str(exc)) from exc
    _judged(judged)


@checks("LOGP-007", after_all=True)
def test_every_answer_has_finite_logprobs(tito: Session) -> None:
    _judged(sum(rules.finite(answer) for answer in tito.answers))


@checks("TEXT-003", after_all=True)
def test_every_text_answer_has_its_bytes(tito: Session) -> None:
    _judged(sum(rules.text_bytes(answer) for answer in tito.answers))


@checks("WV-002", after_all=True, needs=("generate",), builds_on=("GEN-RESP-003",))
def test_every_answer_covers_its_tokens(tito: Session) -> None:
    _judged(sum(rules.covering_spans(a) for a in tito.answers if not a.streamed))


@checks("WV-004", after_all=True, needs=("generate",), builds_on=("STREAM-001", "STREAM-003"))
def test_every_stream_covers_its_tokens(tito: Session) -> None:
    judged = 0
    for answer in (a for a in tito.answers if a.streamed):
        try:
            judged += rules.covering_spans(answer)
        except AssertionError:
            builds_on(tito, "WV-002")  # wrong non-streamed too: WV-002's
            raise
    _judged(judged)


@checks("GEN-RESP-004", after_all=True, needs=("generate",))
def test_every_answer_returns_the_id_sent(tito: Session) -> None:
    """Each chunk of a stream (its usage chunk too) says one id; each answer to a body
    request_id sent without a header says it behind the prefix (a header's, or both, are
    GEN-RESP-005's and -006's)."""
    _judged(sum(rules.id_sent(answer) for answer in tito.answers))


@checks("TEXT-007", after_all=True, needs=("text-mode",))
def test_every_answer_echoes_its_mode(tito: Session) -> None:
    """Each body, and each chunk of a stream, says the output_mode its request sent (one that
    says none is TEXT-005's or TEXT-006's)."""
    _judged(sum(rules.mode_echoed(answer) for answer in tito.answers))


@checks("TEXT-006", after_all=True, needs=("generate",))
def test_every_stream_echoes_one_mode(tito: Session) -> None:
    """Each chunk of a stream, its usage chunk included, echoes the one mode of its request
    (whichever the default is, and whether or not text mode is served)."""
    _judged(sum(rules.one_mode(answer) for answer in tito.answers))


@checks("LOGP-008", after_all=True, needs=("generate",))
def test_every_answer_lists_its_alternatives(tito: Session) -> None:
    _judged(sum(rules.alternatives(answer) for answer in tito.answers))


@checks("WV-008", after_all=True, needs=("generate",))
def test_every_answer_carries_a_label_it_was_given(tito: Session) -> None:
    """Each span's label is "default" on a server without the dev endpoints, where nothing
    can change it. (With them, another client may set any label under any answer, the fuzz
    folded in among them: WV-008's own check judges the label there.)"""
    if tito.features.dev_mode:
        raise Absent("not applicable: the dev endpoints let any client change the label")
    _judged(sum(rules.default_label(answer) for answer in tito.answers))


@checks("STOP-001", after_all=True, needs=("generate",))
def test_every_stop_reason_was_asked_for(tito: Session) -> None:
    """A choice's stop_reason is the stop string or stop token id its request named (one
    that ended another way says null: STOP-003 to STOP-005)."""
    _judged(sum(rules.stop_reason_asked(answer) for answer in tito.answers))
