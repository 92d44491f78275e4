"""What no schema can say: the arithmetic of logprobs, spans, usage and stop handling.

Each function raises AssertionError with a message a server author can act on.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn


def fail(message: str) -> NoReturn:
    raise AssertionError(message)


def over_max_logprobs(s: Any) -> int:
    """A logprobs value the server rejects: one past its learned maximum, or past vLLM's
    default 20 when the probe found none (a server that takes anything fails LOGP-009)."""
    limit = s.limits.max_logprobs
    return (20 if limit is None else limit) + 1


def choices_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        fail(f"response has no choices: {str(response)[:200]}")
    assert isinstance(choices, list)
    return choices


def ids_of(choice: dict[str, Any]) -> list[Any]:
    """A choice's token_ids read leniently (digit strings as numbers): their form is
    GEN-RESP-001's to judge, not every check's that compares them."""
    ids = choice.get("token_ids")
    if not isinstance(ids, list):
        return []
    return [int(t) if isinstance(t, str) and t.isdigit() else t for t in ids]


def token_logprobs(choice: dict[str, Any], k: int, where: str = "choice") -> list[dict[str, Any]]:
    """Tokens-mode logprobs of one choice, checked entry by entry (LOGP-*)."""
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("content"), list):
        fail(f"{where}: logprobs were requested but logprobs.content is {logprobs!r:.200}")
    content: list[dict[str, Any]] = logprobs["content"]
    return content


def check_count(content: list[Any], token_ids: list[int], where: str) -> None:
    if len(content) != len(token_ids):
        fail(f"{where}: {len(content)} logprob entries for {len(token_ids)} token_ids")


def check_integer_ids(content: list[dict[str, Any]], where: str) -> None:
    for i, entry in enumerate(content):
        for j, item in enumerate([entry, *entry.get("top_logprobs", [])]):
            tid = item.get("token_id")
            if isinstance(tid, int) and not isinstance(tid, bool):
                continue
            token = item.get("token")
            if tid is None and isinstance(token, str) and token.startswith("token_id:"):
                path = f"content[{i}]" + (f".top_logprobs[{j - 1}]" if j else "")
                fail(
                    f'{where}: logprobs use the legacy "token_id:N" form, no integer token_id: '
                    f"{path}.token = {token!r}"
                )
            fail(f"{where}: entry {i} item {j} token_id is {tid!r}, not an integer")


def token_id_of(item: Any) -> Any:
    """The token an entry names, in either form: the integer `token_id`, or the older
    `"token_id:<id>"` string (whose use is LOGP-001's failure, not every logprob check's)."""
    if not isinstance(item, dict):
        return None
    tid = item.get("token_id")
    if isinstance(tid, int) and not isinstance(tid, bool):
        return tid
    for legacy in (tid, item.get("token")):
        if isinstance(legacy, str) and legacy.startswith("token_id:"):
            digits = legacy.removeprefix("token_id:")
            return int(digits) if digits.isdigit() else legacy
    return tid


def is_legacy(item: Any) -> bool:
    """An entry in the older form: no integer token_id, a `"token_id:<id>"` string instead."""
    if not isinstance(item, dict):
        return False
    tid = item.get("token_id")
    if isinstance(tid, int) and not isinstance(tid, bool):
        return False
    return any(isinstance(v, str) and v.startswith("token_id:") for v in (tid, item.get("token")))


def check_sampled_first(content: list[dict[str, Any]], token_ids: list[int], where: str) -> None:
    for i, entry in enumerate(content):
        top = entry.get("top_logprobs") or []
        if not top:
            fail(f"{where}: entry {i} has an empty top_logprobs")
        sampled = token_id_of(entry)
        if i < len(token_ids) and sampled != token_ids[i]:
            fail(f"{where}: entry {i} token_id {sampled} != token_ids[{i}] {token_ids[i]}")
        if token_id_of(top[0]) != sampled:
            fail(
                f"{where}: entry {i}: the sampled token {sampled} is not first in "
                f"top_logprobs (first is {token_id_of(top[0])})"
            )


def check_finite(content: list[dict[str, Any]], where: str) -> None:
    for i, entry in enumerate(content):
        for item in [entry, *entry.get("top_logprobs", [])]:
            value = item.get("logprob")
            if not isinstance(value, int | float) or not math.isfinite(value) or value > 0:
                fail(f"{where}: entry {i} has logprob {value!r}; logprobs are finite and <= 0")


def check_ranks(content: list[dict[str, Any]], where: str, k: int = 20) -> None:
    """Rank 1 is the most likely; alternatives are in rank order. Reads only ranks and
    logprobs: where the sampled token sits is LOGP-003's, how many items LOGP-008's."""
    for i, entry in enumerate(content):
        top = list(entry.get("top_logprobs") or [])[: max(k, 1)]
        rank = entry.get("rank")
        if rank is not None and (not isinstance(rank, int) or rank < 1):
            fail(f"{where}: entry {i} rank {rank!r} is not a positive integer")
        sampled = token_id_of(entry)
        own = next((j for j, t in enumerate(top) if token_id_of(t) == sampled), None)
        others = [t for j, t in enumerate(top) if j != own]
        ranks = [t.get("rank") for t in others]
        if any(not isinstance(r, int) for r in ranks):
            continue
        if len(set(ranks)) != len(ranks) or ranks != sorted(ranks):
            fail(f"{where}: entry {i} top_logprobs ranks {ranks} are not distinct and ascending")
        if others and others[0].get("rank") != 1 and rank != 1:
            fail(
                f"{where}: entry {i}: no entry has rank 1 (sampled rank {rank}, "
                f"alternatives {ranks})"
            )
        better = [t for t in others if t.get("logprob", -math.inf) > entry.get("logprob", 0)]
        if isinstance(rank, int) and rank != 1 + len(better) and len(others) >= rank - 1:
            fail(
                f"{where}: entry {i}: sampled rank {rank} but {len(better)} alternatives "
                f"are more likely"
            )
        for a, b in zip(others, others[1:], strict=False):
            if a.get("logprob", 0) < b.get("logprob", 0) - 1e-6:
                fail(
                    f"{where}: entry {i}: rank {a.get('rank')} is less likely than rank "
                    f"{b.get('rank')}"
                )


def as_bytes(value: Any) -> bytes | None:
    """A text-mode logprob's `bytes` (a list of byte values) as bytes; None for anything else."""
    if not isinstance(value, list) or not all(type(b) is int and 0 <= b < 256 for b in value):
        return None
    return bytes(value)


def check_spans(spans: Any, n_tokens: int, where: str) -> None:
    """Half-open, contiguous, in order, covering exactly the output; [] for no tokens (WV-*)."""
    if not isinstance(spans, list):
        fail(f"{where}: weight_versions is {spans!r}, not a list")
    if n_tokens == 0:
        if spans != []:
            fail(f"{where}: an output with no tokens must get [], got {spans}")
        return
    if not spans:
        fail(f"{where}: weight_versions is [] for {n_tokens} tokens")
    position = 0
    for span in spans:
        if not isinstance(span, dict):
            fail(f"{where}: span {span!r} is not an object (spans {spans})")
        start, end = span.get("start"), span.get("end")
        if start != position:
            fail(f"{where}: span {span} starts at {start}, expected {position} (spans {spans})")
        if not isinstance(end, int) or end <= start:
            fail(f"{where}: span {span} is empty or reversed")
        position = end
    if position != n_tokens:
        fail(f"{where}: spans end at {position} but the output has {n_tokens} tokens: {spans}")


def check_usage(response: dict[str, Any], prompt_len: int) -> None:
    usage = response.get("usage")
    if not isinstance(usage, dict):
        fail(f"usage is {usage!r}")
    returned = sum(len(c.get("token_ids") or []) for c in choices_of(response))
    expected = {
        "prompt_tokens": prompt_len,
        "completion_tokens": returned,
        "total_tokens": prompt_len + returned,
    }
    got = {k: usage.get(k) for k in expected}
    if got != expected:
        fail(f"usage {got} does not count what was returned {expected}")
