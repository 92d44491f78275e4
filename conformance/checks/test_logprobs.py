"""Tokens-mode logprobs and prompt logprobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance import api
from conformance.outcomes import Absent, Blocked, Limit
from conformance.registry import checks
from conformance.requirements.model import MUST, SHOULD, Feature, Requirement, Source
from conformance.session import Session
from conformance.tito import semantics
from conformance.tito.semantics import choices_of, fail

REQUIREMENTS = [
    Requirement(
        "LOGP-001",
        MUST,
        Feature.LOGPROBS,
        '`token_id` is an integer, not the older `"token_id:<id>"` string.',
        "tokens-mode logprob token_id is an integer",
        needs=("generate",),
        fields=("token_id",),
    ),
    Requirement(
        "LOGP-002",
        MUST,
        Feature.LOGPROBS,
        "one entry per token",
        "len(logprobs.content) == len(token_ids)",
        needs=("generate",),
        diff=("n2-logprobs-2",),
    ),
    Requirement(
        "LOGP-003",
        MUST,
        Feature.LOGPROBS,
        "sampled token first",
        "the sampled token is the first entry of top_logprobs",
        needs=("generate",),
        diff=("logprobs-3-greedy",),
    ),
    Requirement(
        "LOGP-004",
        MUST,
        Feature.LOGPROBS,
        "Needs `sampling_params.logprobs`.",
        "without sampling_params.logprobs no logprobs are returned",
        needs=("generate",),
    ),
    Requirement(
        "LOGP-005",
        MUST,
        Feature.LOGPROBS,
        'With output_mode: "tokens", logprobs are GenerateLogProbs with an integer token_id and '
        "rank per entry and no token or bytes",
        "tokens-mode entries have token_id and rank and no token or bytes",
        needs=("generate",),
        fields=("token_id", "rank", "token", "bytes"),
    ),
    Requirement(
        "LOGP-006",
        MUST,
        Feature.LOGPROBS,
        "an integer token_id and rank per entry",
        "ranks are consistent with the logprobs (rank 1 is the most likely)",
        needs=("generate",),
    ),
    Requirement(
        "LOGP-007",
        MUST,
        Feature.LOGPROBS,
        "logprobs keyed by integer token ID",
        "every logprob is finite and <= 0",
        needs=("generate",),
    ),
    Requirement(
        "LOGP-008",
        SHOULD,
        Feature.LOGPROBS,
        "top_logprobs has exactly max(logprobs, 1) entries.",
        "top_logprobs length is max(k, 1)",
        source=Source.VLLM,
        evidence="vllm-cpu.md; test_generate_logprobs[0,1,5]",
        needs=("generate",),
        diff=("logprobs-0",),
    ),
    Requirement(
        "LOGP-009",
        SHOULD,
        Feature.LOGPROBS,
        "sampling_params.logprobs above the server's maximum (20 by default) is a 400.",
        "logprobs 21 is a 400",
        source=Source.VLLM,
        expected_status=400,
        evidence="vllm-source-notes §2.1 (--max-logprobs)",
        needs=("generate",),
        diff=("logprobs-21",),
    ),
    Requirement(
        "LOGP-010",
        SHOULD,
        Feature.LOGPROBS,
        "sampling_params.prompt_logprobs gives prompt_logprobs with one entry per prompt token, "
        "the first null.",
        "prompt_logprobs has one entry per prompt token and starts with null",
        source=Source.VLLM,
        evidence="vllm-cpu.md; vllm-source-notes §3",
        needs=("generate",),
        diff=("n2-return-token-ids-prompt-logprobs", "prompt-logprobs-0", "stream-prompt-logprobs"),
    ),
]

K = 5


def top_k(s: Session) -> int:
    """K, or the server's max_logprobs if smaller."""
    return s.limits.logprobs(K)


def with_logprobs(s: Session) -> dict:
    # output_mode sent explicitly: the default mode is GEN-REQ-010's (old servers ignore it)
    payload = api.seeded(8, n=s.limits.n(2), logprobs=top_k(s), ignore_eos=True) | {
        "output_mode": "tokens"
    }
    return s.remember("logprobs", lambda: api.generate(s, payload))


def entries(s: Session) -> list[tuple[str, list[dict], list[int]]]:
    out = []
    for choice in choices_of(with_logprobs(s)):
        where = f"choice {choice.get('index')}"
        ids = semantics.ids_of(choice)  # read leniently: their form is GEN-RESP-001's
        out.append((where, semantics.token_logprobs(choice, top_k(s), where), ids))
    return out


@checks("LOGP-001")
def test_token_id_is_integer(tito: Session) -> None:
    for where, content, _ in entries(tito):
        semantics.check_integer_ids(content, where)


@checks("LOGP-002", builds_on=("GEN-RESP-003",))
def test_one_entry_per_token(tito: Session) -> None:
    for where, content, ids in entries(tito):
        semantics.check_count(content, ids, where)


@checks("LOGP-003", builds_on=("GEN-RESP-001",))
def test_sampled_first(tito: Session) -> None:
    for where, content, ids in entries(tito):
        semantics.check_sampled_first(content, ids, where)


@checks("LOGP-004")
def test_no_logprobs_unless_asked(tito: Session) -> None:
    data = api.generate(tito, api.body(3, top={"output_mode": "tokens"}))
    for i, choice in enumerate(choices_of(data)):
        if choice.get("logprobs") is not None:
            fail(f"choice {i} carries logprobs although sampling_params.logprobs was not set")


@checks("LOGP-005")
def test_tokens_mode_entry_keys(tito: Session) -> None:
    judged = 0
    for where, content, _ in entries(tito):
        for i, entry in enumerate(content):
            if semantics.is_legacy(entry):
                continue  # the older form as a whole is LOGP-001's failure
            judged += 1
            for item in [entry, *entry.get("top_logprobs", [])]:
                extra = {"token", "bytes"} & set(item)
                if extra or "rank" not in item or "token_id" not in item:
                    fail(
                        f"{where} entry {i}: tokens-mode item keys {sorted(item)} (needs "
                        f"token_id and rank, no token or bytes)"
                    )
    if not judged:
        raise Blocked("LOGP-001", "every entry is in the older token_id:<id> form")


@checks("LOGP-006")
def test_ranks_consistent(tito: Session) -> None:
    for where, content, _ in entries(tito):
        try:
            semantics.check_finite(content, where)
        except AssertionError as exc:  # ranks cannot be read from such values
            raise Blocked("LOGP-007", str(exc)) from exc
        semantics.check_ranks(content, where, top_k(tito))


@checks("LOGP-007")
def test_logprobs_finite_nonpositive(tito: Session) -> None:
    for where, content, _ in entries(tito):
        semantics.check_finite(content, where)


@checks("LOGP-008")
def test_top_logprobs_count(tito: Session) -> None:
    k_max = top_k(tito)
    for k in dict.fromkeys((0, k_max)):
        data = with_logprobs(tito) if k == k_max else api.generate(tito, api.seeded(4, logprobs=0))
        for choice in choices_of(data):
            for i, entry in enumerate(semantics.token_logprobs(choice, k)):
                if len(entry.get("top_logprobs") or []) != max(k, 1):
                    fail(
                        f"logprobs {k}: entry {i} has {len(entry.get('top_logprobs') or [])} "
                        f"top_logprobs, expected {max(k, 1)}"
                    )


@checks("LOGP-009")
def test_logprobs_above_max(tito: Session) -> None:
    above = semantics.over_max_logprobs(tito)
    api.rejected(
        tito,
        api.body(2, logprobs=above),
        what=f"logprobs {above} (the server's maximum is {tito.limits.max_logprobs or 20})",
    )


def prompt_logprobs(s: Session) -> dict:
    k = s.limits.logprobs(1)
    return s.remember("prompt-logprobs", lambda: api.generate(s, api.body(2, prompt_logprobs=k)))


@checks("LOGP-006", needs=("generate",), builds_on=("LOGP-010",))
def test_prompt_logprob_ranks(tito: Session) -> None:
    """A prompt position's entries rank as the output's do: with one alternative or more
    asked, the most likely token has rank 1, and a likelier one never ranks below."""
    k = tito.limits.logprobs(1)
    plp = prompt_logprobs(tito).get("prompt_logprobs")
    for i, position in enumerate(plp if isinstance(plp, list) else []):
        entries = [e for e in (position or {}).values() if isinstance(e, dict)]
        ranked: list[tuple[int, float]] = [
            (e["rank"], e["logprob"])
            for e in entries
            if isinstance(e.get("rank"), int) and isinstance(e.get("logprob"), (int, float))
        ]
        if len(ranked) < len(entries):
            continue  # the entries' form is SCHEMA-GEN-001's
        if k >= 1 and ranked and 1 not in {r for r, _ in ranked}:
            fail(f"prompt_logprobs[{i}]: no entry has rank 1 (ranks {sorted(ranked)})")
        ordered = sorted(ranked)
        for (r1, lp1), (r2, lp2) in zip(ordered, ordered[1:], strict=False):
            if r1 < r2 and lp1 < lp2 - 1e-6:
                fail(
                    f"prompt_logprobs[{i}]: rank {r1} ({lp1}) is less likely than rank {r2} ({lp2})"
                )


@checks("LOGP-010")
def test_prompt_logprobs(tito: Session) -> None:
    data = prompt_logprobs(tito)
    plp = data.get("prompt_logprobs")
    if not isinstance(plp, list) or len(plp) != len(api.PROMPT):
        fail(f"prompt_logprobs {plp!r:.200} is not one entry per prompt token ({len(api.PROMPT)})")
    assert isinstance(plp, list)
    if plp[0] is not None:
        fail(f"prompt_logprobs[0] is {plp[0]!r}, expected null")
    if any(not isinstance(e, dict) or not e for e in plp[1:]):
        fail("prompt_logprobs entries after the first must be non-empty objects")


AGREE = 0.2
"""How far two readings of one logprob may differ (two prefills of one prefix: bf16 kernels
of other lengths move a logprob by hundredths; a wrong value moves it by more)."""


@dataclass(frozen=True)
class Step:
    """The first generated step after a prefix, read whole and streamed: its token and the
    sampled entry of each reading (None: absent or of another form)."""

    token: object
    whole: dict[str, Any] | None
    streamed: dict[str, Any] | None

    def agreed(self, key: str) -> Any:
        """`key` of the sampled entry where both readings give it alike (None: they differ)."""
        if self.whole is None or self.streamed is None:
            return None
        first, second = self.whole.get(key), self.streamed.get(key)
        if isinstance(first, (int, float)) and isinstance(second, (int, float)):
            return first if abs(first - second) <= AGREE else None
        return first if first == second else None


def _first(entries: object) -> dict[str, Any] | None:
    entry = entries[0] if isinstance(entries, list) and entries else None
    return entry if isinstance(entry, dict) else None


def _greedy_step(s: Session, text: bool) -> Step:
    """The step that follows the prompt cut before its last token: the model's logprobs for
    the prefix that the prompt's last position stands on."""
    top = {"output_mode": "text"} if text else None
    payload = api.body(1, prompt=api.PROMPT[:-1], top=top, logprobs=s.limits.logprobs(1))
    whole = choices_of(api.generate(s, payload, what="the prompt before its last token"))[0]
    part = api.stream(s, payload, what="the same, streamed").choices().get(0)
    ids = whole.get("token_ids")
    token = ids[0] if isinstance(ids, list) and ids else None
    content = (whole.get("logprobs") or {}).get("content")
    return Step(token, _first(content), _first(part.logprobs if part else None))


@checks("LOGP-010", needs=("generate",))
def test_prompt_logprobs_are_the_models(tito: Session) -> None:
    """A prompt position's logprobs are the model's for the prefix before it: the token a
    greedy generation from that prefix picks carries the same logprob there, and with a
    tokenizer the same decoded string as text mode's entry for it. Judged where the
    generation's two readings (whole and streamed) agree; where they do not, the generation's
    logprobs are what is wrong (LOGP-*, STREAM-003), not the prompt's."""
    if tito.limits.logprobs(1) < 1:
        raise Limit("the server allows no alternative logprob to compare", max_logprobs=0)
    at = len(api.PROMPT) - 1
    plp = prompt_logprobs(tito).get("prompt_logprobs")
    position = plp[at] if isinstance(plp, list) and len(plp) > at else None
    step = _greedy_step(tito, text=False)
    there = position.get(str(step.token)) if isinstance(position, dict) else None
    if not isinstance(there, dict):
        raise Absent("not applicable: the greedy token is not among the position's entries")
    value, given = step.agreed("logprob"), there.get("logprob")
    numbers = isinstance(value, (int, float)) and isinstance(given, (int, float))
    if numbers and value <= 0 and abs(given - value) > AGREE:  # a positive one is LOGP-007's
        fail(
            f"prompt_logprobs[{at}] gives token {step.token} logprob {given}; generating "
            f"from the prompt before it gives it {value} (whole and streamed)"
        )
    if "text-mode" not in tito.features.names():
        return
    spoken = _greedy_step(tito, text=True)
    name = spoken.agreed("token")
    if not isinstance(name, str) or semantics.is_legacy({"token": name}):
        return  # a `token_id:N` placeholder (--return-tokens-as-token-ids) names no string
    if spoken.token == step.token and there.get("decoded_token") != name:
        fail(
            f"prompt_logprobs[{at}] decodes token {step.token} as {there.get('decoded_token')!r}; "
            f"text mode's logprobs name it {name!r} (whole and streamed)"
        )
