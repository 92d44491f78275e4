"""One finished request of a load run, judged by the suite's rules under the suite's IDs.

The rules of a single answer are `conformance.tito.rules`' and `semantics`' (the same functions
`checks/test_every_answer.py` and the requirement checks call), the form is `openapi`'s. What
only a run of many requests can show is judged here: seeded repeats alike, a stream's deltas
the same as the same request's body, labels consistent with the changes the run made, aborts
ending in "abort", DP pins accepted and run on their rank, hung-up streams let go, greedy ranks
(those three: `engine_rules`), and nothing lost (LOAD-001). An abort the request outlived
fails only on evidence a slower client cannot manufacture (`conformance.inflight.proof`): the
request could not have ended before the abort was answered (BOUND), or an engine still held it
after (ENGINE); otherwise it is counted as unproven, never as a violation.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from conformance.inflight.proof import bound_proof, engine_proof
from conformance.load import engine_rules
from conformance.load.engines import Read
from conformance.load.mix import Facts, Plan
from conformance.load.tally import Tally, Violation
from conformance.tito import answers, rules, semantics
from conformance.tito.answers import Answer
from conformance.tito.streamed import Streamed
from conformance.wire.exchange import Exchange
from openapi import all_valid, is_valid

LOST = "LOAD-001"
"""Every request ends with an answer, an error or an abort before its deadline."""

EVERY: tuple[tuple[str, rules.Rule], ...] = (
    ("GEN-REQ-008", rules.n_choices),
    ("LOGP-002", rules.entry_per_token),
    ("LOGP-003", rules.sampled_first),
    ("LOGP-006", rules.ranked),
    ("LOGP-007", rules.finite),
    ("LOGP-008", rules.alternatives),
    ("TEXT-003", rules.text_bytes),
    ("GEN-RESP-004", rules.id_sent),
    ("TEXT-006", rules.one_mode),
    ("STOP-001", rules.stop_reason_asked),
)
"""The rules of one answer, each under its requirement (`checks/test_every_answer.py`'s)."""
FINISHES = ("stop", "length", "abort")


@dataclass
class Ended:
    """How one request went, as the client saw it (times in seconds since it was sent)."""

    plan: Plan
    rid: str
    exchange: Exchange
    status: int | None = None
    body: Any = None  # a non-streamed answer's JSON
    streamed: Streamed | None = None
    error: str = ""  # no answer: the transport's words
    first_token_s: float | None = None
    ended_s: float = 0.0
    aborts: list[tuple[float, float, int, bytes]] = field(default_factory=list)
    reads: list[tuple[float, float, bool]] = field(default_factory=list)  # engine state
    hung_up: bool = False
    known_label: int = 0  # the latest label this worker knew set when the request was sent
    paused: bool = False  # a pause began while it ran
    fastest_s: float | None = None  # the abort shape's fastest completion (BOUND)
    in_flight: int = 0
    gaps: list[float] = field(default_factory=list)
    rank_asked: bool = False
    rank_reads: list[Read] = field(default_factory=list)  # a pinned stream: who holds it
    hang_up_reads: list[Read] = field(default_factory=list)  # after its client hung up


class Judge:
    """A worker's judge: its tally, what the probe learned, and the run's memory of seeded
    answers (per worker: a repeat is judged against the first answer this worker saw)."""

    def __init__(self, tally: Tally, facts: Facts, label_prefix: str, worker: str = "") -> None:
        self.tally = tally
        self.facts = facts
        self.prefix = label_prefix
        self.worker = worker
        self.seeded: dict[str, tuple[bool, tuple[tuple[int, ...], ...], str]] = {}
        self._lock = threading.Lock()

    # ---------------------------------------- the verdicts

    def violate(self, requirement: str, message: str, ended: Ended) -> None:
        self.tally.violate(
            Violation(
                requirement,
                message,
                ended.exchange.reproducer(),
                round(self.tally.at(), 3),
                ended.in_flight,
                round(self.tally.rate(), 2),
                self.worker,
            )
        )

    def rule(self, requirement: str, ended: Ended, check: Any, *args: Any) -> None:
        """Run one rule (a function raising AssertionError, returning how many it judged)."""
        try:
            count = check(*args)
        except rules.Unreadable:
            return  # another requirement's failure (LOGP-007's), not this one's
        except AssertionError as exc:
            self.violate(requirement, str(exc), ended)
            return
        self.tally.judge(requirement, 1 if count is None else int(count))

    # ---------------------------------------- one request

    def judge(self, ended: Ended) -> Answer | None:
        """Every rule that reads this request; the answer (None: no answer of the spec's form)."""
        plan = ended.plan
        if ended.error:
            self.violate(LOST, f"{ended.exchange.sent()[:200]}: no answer: {ended.error}", ended)
            self.tally.bump("lost")
            return None
        self.tally.judge(LOST)
        if plan.rank is not None:
            self.rule("DP-001", ended, _rank_accepted, ended)
            held = engine_rules.rank_held
            self.rule("DP-001", ended, held, ended.rank_reads, plan.rank, ended.rid)
        if ended.hung_up:
            self._let_go(ended)
        if ended.status != 200:
            self.tally.bump("errors")
            return None
        what = f"{'stream' if plan.stream else 'generate'} {ended.rid}"
        if ended.streamed is not None:
            answer = self._stream(what, ended)
        else:
            answer = self._body(what, ended)
        if answer is None:
            return None
        for requirement, check in EVERY:
            self.rule(requirement, ended, check, answer)
        self.rule("WV-004" if answer.streamed else "WV-002", ended, rules.covering_spans, answer)
        if self.facts.dev_mode:
            self.rule("WV-008", ended, self._labels_known, answer)
            self.rule("WV-009", ended, self._labels_in_order, answer)
            self.rule("WV-007", ended, self._labels_current, answer, ended.known_label)
        else:
            self.rule("WV-008", ended, rules.default_label, answer)
        for choice in answer.choices:
            self.rule("STOP-004", ended, _null_reason, choice, "length", answer.what)
            self.rule("STOP-005", ended, _null_reason, choice, "abort", answer.what)
        self.rule("GEN-REQ-006", ended, engine_rules.greedy_ranks, answer)
        self.rule("GEN-RESP-001", ended, _within_max, answer, plan.max_tokens)
        self.rule("GEN-REQ-005", ended, _length_at_max, answer, plan.max_tokens)
        self.rule("STOP-001", ended, _stops_end, answer)
        if plan.abort:
            self._aborted(answer, ended)
        elif plan.repeat_of is not None or "seed" in answer.params:
            self._seeded(answer, ended)
        return answer

    def _body(self, what: str, ended: Ended) -> Answer | None:
        body = ended.body
        if not isinstance(body, dict) or not is_valid("GenerateResponse", body):
            self.violate("SCHEMA-GEN-001", f"{what}: {_problems('GenerateResponse', body)}", ended)
            return None
        self.tally.judge("SCHEMA-GEN-001")
        answer = answers.of_body(what, ended.plan.body, body, ended.plan.headers)
        if answer is None:
            return None
        self.rule("GEN-RESP-003", ended, semantics.check_usage, body, len(ended.plan.prompt))
        self.rule("GEN-RESP-002", ended, _finishes, answer)
        self.rule("WV-001", ended, _spans_listed, answer)
        return answer

    def _stream(self, what: str, ended: Ended) -> Answer | None:
        streamed = ended.streamed
        assert streamed is not None
        bad = [c for c in streamed.chunks if "error" not in c]
        if all_valid("GenerateStreamPayload", bad):  # one call for all; one by one if not
            bad = []
        bad = [c for c in bad if not is_valid("GenerateStreamPayload", c)]
        if bad:
            problem = _problems("GenerateStreamPayload", bad[0])
            self.violate("SCHEMA-STREAM-001", f"{what}: a chunk: {problem}", ended)
            return None
        self.tally.judge("SCHEMA-STREAM-001")
        if streamed.errors:  # an error event: the request ended with an error
            self.tally.bump("errors")
            return None
        if ended.hung_up:
            return None  # the client left: what the stream would have said is unknown
        self.rule("STREAM-002", ended, _done, streamed, what)
        answer = answers.of_stream(what, ended.plan.body, streamed, ended.plan.headers)
        if answer is None:
            return None
        self.rule("STREAM-004", ended, _stream_finishes, answer)
        self.rule("WV-003", ended, _spans_listed, answer)
        if (ended.plan.body.get("stream_options") or {}).get("include_usage"):
            self.rule("STREAM-007", ended, _usage_chunk, streamed, len(ended.plan.prompt), what)
        return answer

    # ---------------------------------------- what only many requests show

    def _aborted(self, answer: Answer, ended: Ended) -> None:
        """The client aborted it: ABORT-006 on the abort's answer, ABORT-002 (a stream) or
        ABORT-003 (a body) on the request's end, proven as `proof` says."""
        for _, _, status, body in ended.aborts:
            if ended.plan.abort == "abort":
                self.rule("ABORT-006", ended, _empty_200, status, body)
        requirement = "ABORT-002" if answer.streamed else "ABORT-003"
        if not ended.aborts:
            return  # it ended before the client could abort it: nothing to judge
        finish = [c.get("finish_reason") for c in answer.choices]
        if finish and all(f == "abort" for f in finish):
            self.tally.judge(requirement)
            return
        if ended.paused and "abort" in finish:
            return
        actions = [(sent, answered) for sent, answered, _, _ in ended.aborts]
        # When the server knew the request: its first token (a stream's). A body has none to
        # show, and its first token being due is no evidence from a busy client, whose request
        # may leave after the abort its timer sent (an abort of an id not yet known is
        # ignored, correctly): a body fails only on the engines' word, held before and after.
        known = ended.first_token_s
        proof = engine_proof(actions, ended.reads, known)
        if proof is None and known is not None:
            proof = bound_proof(actions, known, ended.fastest_s)
        if proof is None:
            self.tally.doubt(requirement)
            return
        path = "/abort_requests" if ended.plan.abort == "legacy" else "/inference/v1/abort_requests"
        self.violate(
            requirement,
            f"{answer.what}: aborted through {path}, it ended with finish_reason {finish}; {proof}",
            ended,
        )

    def _let_go(self, ended: Ended) -> None:
        """ABORT-009 on a stream its client hung up on (`engine_rules.let_go`)."""
        left = ended.plan.max_tokens - (ended.plan.hang_up or 0)
        try:
            judged = engine_rules.let_go(ended.hang_up_reads, self.facts, left, ended.rid)
        except AssertionError as exc:
            self.violate("ABORT-009", str(exc), ended)
            return
        self.tally.judge("ABORT-009", judged)

    def _seeded(self, answer: Answer, ended: Ended) -> None:
        """A seeded request sent again answers the same tokens (GEN-REQ-007), streamed or not
        (STREAM-003: the deltas concatenate to the body), where no label change came between
        (new weights may sample otherwise)."""
        finish = [c.get("finish_reason") for c in answer.choices]
        if "abort" in finish or ended.paused:
            return
        labels = {s.get("version") for c in answer.choices for s in c.get("weight_versions") or []}
        if len(labels) > 1:
            return
        label = str(next(iter(labels), ""))
        key = seed_key(ended.plan.body)
        tokens = tuple(tuple(semantics.ids_of(c)) for c in sorted(answer.choices, key=_index))
        with self._lock:
            first = self.seeded.setdefault(key, (answer.streamed, tokens, label))
        if first == (answer.streamed, tokens, label) and ended.plan.repeat_of is None:
            return
        streamed, then, then_label = first
        if then_label != label:
            return
        requirement = "STREAM-003" if streamed != answer.streamed else "GEN-REQ-007"
        if then == tokens:
            self.tally.judge(requirement)
            return
        kinds = ("a stream", "a body") if streamed else ("a body", "a stream")
        self.violate(
            requirement,
            f"{answer.what}: the same seeded request answered {kinds[0]} "
            f"{_short(then)} and now {kinds[1] if requirement == 'STREAM-003' else kinds[0]} "
            f"{_short(tokens)}",
            ended,
        )

    def _index_of_label(self, label: Any) -> int | None:
        if label == self.facts.label:
            return 0
        if isinstance(label, str) and label.startswith(self.prefix):
            digits = label.removeprefix(self.prefix)
            return int(digits) if digits.isdigit() else None
        return None

    def _span_labels(self, answer: Answer) -> list[tuple[str, list[Any]]]:
        found = []
        for choice in answer.choices:
            spans = choice.get("weight_versions")
            labels = [s.get("version") for s in spans or [] if isinstance(s, dict)]
            found.append((f"{answer.what}, choice {choice.get('index')}", labels))
        return found

    def _labels_known(self, answer: Answer) -> int:
        """WV-008: every span carries the server's label or one this run set."""
        judged = 0
        for where, labels in self._span_labels(answer):
            for label in labels:
                judged += 1
                if self._index_of_label(label) is None:
                    semantics.fail(
                        f"{where}: a span is labelled {label!r}; the run's labels were "
                        f"{self.facts.label!r} and {self.prefix}<k>"
                    )
        return judged

    def _labels_in_order(self, answer: Answer) -> int:
        """WV-009: a label change splits the spans in the order the labels were set."""
        judged = 0
        for where, labels in self._span_labels(answer):
            order = [self._index_of_label(label) for label in labels]
            if None in order:
                continue  # WV-008's
            judged += 1
            if order != sorted(order):  # type: ignore[type-var]
                semantics.fail(f"{where}: the spans' labels {labels} are not in the run's order")
        return judged

    def _labels_current(self, answer: Answer, known: int) -> int:
        """WV-007: a request sent after label k was set (and this worker told so) carries k or
        a later label from its first token."""
        judged = 0
        for where, labels in self._span_labels(answer):
            first = self._index_of_label(labels[0]) if labels else None
            if first is None:
                continue
            judged += 1
            if first < known:
                semantics.fail(
                    f"{where}: sent after the label {self.prefix}{known} was set, its first "
                    f"span is labelled {labels[0]!r}"
                )
        return judged


def seed_key(body: dict[str, Any]) -> str:
    """What makes two requests the same request: the body less how it is delivered."""
    kept = {k: v for k, v in body.items() if k not in ("stream", "stream_options", "request_id")}
    return json.dumps(kept, sort_keys=True)


def _index(choice: dict[str, Any]) -> int:
    index = choice.get("index")
    return index if isinstance(index, int) else 0


def _short(tokens: tuple[tuple[int, ...], ...]) -> str:
    text = str([list(t) for t in tokens])
    return text if len(text) < 160 else text[:157] + "..."


def _problems(schema: str, instance: Any) -> str:
    from conformance.api import schema_problems

    if not isinstance(instance, dict):
        return f"the answer is not a JSON object: {str(instance)[:200]}"
    return "; ".join(schema_problems(schema, instance)) or "not valid against the spec"


def _rank_accepted(ended: Ended) -> int:
    if ended.status == 400:
        semantics.fail(
            f"X-data-parallel-rank {ended.plan.rank}, inside the detected data_parallel_size, "
            f"answered 400"
        )
    return 1


def _finishes(answer: Answer) -> int:
    for choice in answer.choices:
        if choice.get("finish_reason") not in FINISHES:
            semantics.fail(
                f"{answer.what}, choice {choice.get('index')}: finish_reason "
                f"{choice.get('finish_reason')!r} is none of {FINISHES}"
            )
    return len(answer.choices)


def _stream_finishes(answer: Answer) -> int:
    for choice in answer.choices:
        if choice.get("finish_reason") is None:
            semantics.fail(f"{answer.what}, choice {choice.get('index')}: no finish_reason")
    return len(answer.choices)


def _spans_listed(answer: Answer) -> int:
    for choice in answer.choices:
        if not isinstance(choice.get("weight_versions"), list):
            semantics.fail(
                f"{answer.what}, choice {choice.get('index')}: weight_versions is "
                f"{choice.get('weight_versions')!r}, not a list"
            )
    return len(answer.choices)


def _null_reason(choice: dict[str, Any], finish: str, what: str) -> int:
    if choice.get("finish_reason") != finish:
        return 0
    if choice.get("stop_reason") is not None:
        semantics.fail(
            f"{what}, choice {choice.get('index')}: finish_reason {finish!r} with "
            f"stop_reason {choice.get('stop_reason')!r} (null expected)"
        )
    return 1


def _within_max(answer: Answer, max_tokens: int) -> int:
    for choice in answer.choices:
        ids = choice.get("token_ids")
        if not isinstance(ids, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids
        ):
            semantics.fail(f"{answer.what}: token_ids {str(ids)[:120]} are not token ids")
        if len(ids) > max_tokens:
            semantics.fail(
                f"{answer.what}, choice {choice.get('index')}: {len(ids)} tokens for max_tokens "
                f"{max_tokens}"
            )
    return len(answer.choices)


def _length_at_max(answer: Answer, max_tokens: int) -> int:
    judged = 0
    for choice in answer.choices:
        if choice.get("finish_reason") != "length":
            continue
        judged += 1
        got = len(choice.get("token_ids") or [])
        if got != max_tokens:
            semantics.fail(
                f"{answer.what}, choice {choice.get('index')}: finish_reason length after "
                f"{got} tokens, max_tokens {max_tokens}"
            )
    return judged


def _stops_end(answer: Answer) -> int:
    """STOP-001: a stop token id the request named ends the choice where it is sampled."""
    stops = answer.params.get("stop_token_ids")
    if not stops:
        return 0
    judged = 0
    for choice in answer.choices:
        ids = semantics.ids_of(choice)
        judged += 1
        early = [i for i, t in enumerate(ids[:-1]) if t in stops]
        if early:
            semantics.fail(
                f"{answer.what}, choice {choice.get('index')}: stop token {ids[early[0]]} at "
                f"position {early[0]} of {len(ids)} did not end the choice"
            )
        if ids and ids[-1] in stops and choice.get("finish_reason") == "length":
            semantics.fail(
                f"{answer.what}, choice {choice.get('index')}: ended on stop token {ids[-1]} "
                f"with finish_reason length"
            )
    return judged


def _done(streamed: Streamed, what: str) -> int:
    if not streamed.done or streamed.after_done:
        semantics.fail(f"{what}: the stream did not end with data: [DONE]")
    return 1


def _usage_chunk(streamed: Streamed, prompt_len: int, what: str) -> int:
    chunks = streamed.usage_chunks()
    if not chunks:
        semantics.fail(f"{what}: include_usage was asked, no usage chunk came")
    returned = sum(len(c.token_ids) for c in streamed.choices().values())
    usage = chunks[-1]["usage"]
    expected = {"prompt_tokens": prompt_len, "completion_tokens": returned}
    got = {k: usage.get(k) for k in expected}
    if got != expected:
        semantics.fail(f"{what}: the usage chunk says {got}, the stream carried {expected}")
    return 1


def _empty_200(status: int, body: bytes) -> int:
    if status != 200 or body.strip():
        semantics.fail(f"abort answered {status} with {body[:200]!r} (200, empty expected)")
    return 1
