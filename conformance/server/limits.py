"""What the server's configuration allows, learned once before any check runs.

A correct server started with `--max-num-seqs 1`, `--max-logprobs 5` or `--max-model-len 128`
rejects requests beyond those limits, correctly; a check that sends them would read the server's
own 400 as its failure. So the probe learns the limits (and the server's pace, so nothing that
waits is timed by a constant), and checks size their requests to them. A requirement that the
configuration cannot exercise is a skip that names the limit, never a failure.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from conformance.wire import MAX_BODY, Client, ServerBroke

GENERATE = "/inference/v1/generate"
PROBE_PROMPT = [10, 11, 12]
PROBE_N = 64  # the largest n asked for; a server accepting it has no limit a check can reach
PROBE_LOGPROBS = 64
FAR_LOGPROBS = 4096  # asked once 64 passed: vLLM's 400 then names a larger --max-logprobs
PACE_TOKENS = 8
SIZE_TOKENS = 4  # a sampled answer this long shows what each token adds to a body
# vLLM 0.32's own words (captures n5_gt_max_num_seqs, logprobs_21):
N_LIMIT = re.compile(r"max_num_seqs \((\d+)\)")
LOGPROBS_LIMIT = re.compile(r"max allowed: (-?\d+)")


LOGPROB_BYTES = 256
"""What one logprob entry may take (an id, a logprob, in text mode its token and bytes)."""


def _logprob_bytes(asked: Any) -> int:
    """What `logprobs: k` adds per token: the sampled token's entry and k alternatives (the
    learned per-token size was measured without them)."""
    if not isinstance(asked, int) or isinstance(asked, bool) or asked < 0:
        return 0
    return LOGPROB_BYTES * (1 + min(asked, 1 << 20))


@dataclass(frozen=True)
class Limits:
    """None means "no limit found" (up to what the probe asked for, or not reported)."""

    max_model_len: int | None = None
    max_n: int | None = None
    max_logprobs: int | None = None
    ttft_s: float | None = None  # time to the first token chunk of a warm stream
    itl_s: float | None = None  # median time between token chunks
    bytes_per_token: int | None = None  # of a sampled answer: per-token outputs included
    evidence: dict[str, str] = field(default_factory=dict)

    def body_bound(self, body: Any) -> int:
        """The most bytes a correct answer to `body` may take. A server started with a flag
        that adds per-token data to every answer (`--return-sampling-mask` sends up to the
        whole vocabulary per token: ~1 MB at 151,936 ids) answers far more than a plain one;
        the bound grows with what was asked (choices x tokens) at the learned per-token size,
        so only a server sending more than it could owe is cut off."""
        sp = body.get("sampling_params") if isinstance(body, dict) else None
        if not isinstance(sp, dict):
            return MAX_BODY
        per_token = (self.bytes_per_token or 0) + _logprob_bytes(sp.get("logprobs"))
        if not per_token:
            return MAX_BODY
        n, tokens = sp.get("n"), sp.get("max_tokens")
        n = n if isinstance(n, int) else 1
        if not isinstance(tokens, int):
            tokens = self.room(0) or PROBE_N
        return MAX_BODY + 2 * per_token * max(1, n) * max(1, min(tokens, 1 << 20))

    def n(self, wanted: int) -> int:
        """`wanted`, or the server's largest n if that is smaller."""
        return wanted if self.max_n is None else max(1, min(wanted, self.max_n))

    def logprobs(self, wanted: int) -> int:
        return wanted if self.max_logprobs is None else max(0, min(wanted, self.max_logprobs))

    def room(self, prompt_len: int) -> int | None:
        """How many tokens fit after a prompt of `prompt_len` tokens."""
        return None if self.max_model_len is None else self.max_model_len - prompt_len

    def seconds_for(self, tokens: int) -> float:
        """How long `tokens` output tokens take at this server's pace (0 when unknown)."""
        return (self.ttft_s or 0.0) + (self.itl_s or 0.0) * max(0, tokens)

    def as_dict(self) -> dict[str, Any]:
        return {
            "max_model_len": self.max_model_len,
            "max_n": self.max_n,
            "max_logprobs": self.max_logprobs,
            "ttft_s": self.ttft_s,
            "itl_s": self.itl_s,
        }

    def describe(self) -> str:
        def show(value: Any, unit: str = "") -> str:
            return "?" if value is None else f"{value}{unit}"

        def ms(value: float | None) -> str:
            return "?" if value is None else f"{value * 1000:.1f} ms"

        return (
            f"max_model_len {show(self.max_model_len)}, max n {show(self.max_n)}"
            f"{'' if self.max_n is not None else f' (>= {PROBE_N})'}, max logprobs "
            f"{show(self.max_logprobs)}"
            f"{'' if self.max_logprobs is not None else f' (>= {FAR_LOGPROBS})'}; pace: first "
            f"token {ms(self.ttft_s)}, then {ms(self.itl_s)}/token"
        )


def queued_wait(timeout: float, took: float, ahead: int) -> float:
    """How long one of `ahead` requests sent at once may take on a server that runs them one
    at a time (its max_num_seqs is not known yet): each may wait for all the others, at twice
    the pace of the first answer (`took` seconds)."""
    return max(timeout, 2 * ahead * took + 5)


def _body(**sampling: Any) -> dict[str, Any]:
    return {
        "token_ids": PROBE_PROMPT,
        "sampling_params": {"max_tokens": 1, "temperature": 0, **sampling},
    }


def _message(reply: Any) -> str:
    try:
        data = reply.json()
    except ServerBroke:
        return reply.body[:300].decode("utf-8", "replace")
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message", ""))
    return str(data)[:300]


def _largest_accepted(
    client: Client,
    key: str,
    probe: int,
    pattern: re.Pattern[str],
    steps: tuple[int, ...],
    **sampling: Any,
) -> tuple[int | None, str]:
    """Ask for `probe`; a 400 naming the limit gives it; otherwise step down to what passes."""
    try:
        reply = client.post(GENERATE, _body(**sampling, **{key: probe}))
    except ServerBroke as exc:
        return None, f"{key} {probe}: {exc}"
    if reply.status == 200:
        return None, f"{key} {probe} was accepted"
    found = pattern.search(_message(reply))
    if reply.status == 400 and found:
        return int(found.group(1)), f"{key} {probe}: 400 {_message(reply)[:160]!r}"
    for step in steps:
        try:
            if client.post(GENERATE, _body(**sampling, **{key: step})).status == 200:
                return step, f"{key} {probe} answered {reply.status}; {step} was accepted"
        except ServerBroke:
            break
    return steps[-1], f"{key} {probe} answered {reply.status}; nothing larger was accepted"


def _named_limit(
    client: Client, key: str, value: int, pattern: re.Pattern[str]
) -> tuple[int | None, str]:
    """The limit a 400 for `value` names, if it names one."""
    try:
        reply = client.post(GENERATE, _body(**{key: value}))
    except ServerBroke as exc:
        return None, f"{key} {value}: {exc}"
    found = pattern.search(_message(reply)) if reply.status == 400 else None
    if found is None:
        return None, f"{key} {value} answered {reply.status}"
    return int(found.group(1)), f"{key} {value}: 400 {_message(reply)[:160]!r}"


def _max_model_len(client: Client, model: str | None) -> tuple[int | None, str]:
    try:
        reply = client.get("/v1/models")
        data = reply.json() if reply.status == 200 else None
    except ServerBroke:
        return None, "GET /v1/models did not answer"
    entries = data.get("data") if isinstance(data, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        value = entry.get("max_model_len")
        if isinstance(value, int) and value > 0 and (model is None or entry.get("id") == model):
            return value, f"/v1/models: {entry.get('id')} max_model_len {value}"
    return None, "/v1/models names no max_model_len"


def _carries_tokens(data: str) -> bool:
    try:
        chunk = json.loads(data)
    except ValueError:
        return False
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    return any(isinstance(c, dict) and c.get("token_ids") for c in choices or [])


def _pace(client: Client) -> tuple[float | None, float | None, str]:
    """A short warm stream: when its first token came, and the median gap after it."""
    body = _body(max_tokens=PACE_TOKENS, ignore_eos=True) | {"stream": True}
    times: list[float] = []
    try:
        started = time.monotonic()
        with client.stream(GENERATE, body) as stream:
            if stream.status != 200:
                return None, None, f"the pace stream answered {stream.status}"
            for data in stream.events():
                if _carries_tokens(data):
                    times.append(time.monotonic() - started)
    except ServerBroke as exc:
        return None, None, f"the pace stream broke: {exc}"
    if not times:
        return None, None, "the pace stream carried no token"
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    itl = statistics.median(gaps) if gaps else None
    return round(times[0], 4), None if itl is None else round(itl, 5), f"{len(times)} chunks"


def _bytes_per_token(client: Client) -> tuple[int | None, str]:
    """What one sampled token adds to a non-streamed body, per-token outputs included."""
    sampled = _body(max_tokens=SIZE_TOKENS, ignore_eos=True, temperature=1.0, seed=1)
    try:
        reply = client.post(GENERATE, sampled)
        data = reply.json() if reply.status == 200 else None
    except ServerBroke as exc:
        return None, f"a sampled answer of {SIZE_TOKENS} tokens: {exc}"
    choices = data.get("choices") if isinstance(data, dict) else None
    tokens = sum(len(c.get("token_ids") or []) for c in choices or [] if isinstance(c, dict))
    if not tokens:
        return None, "the sampled answer carried no token"
    per_token = max(1, len(reply.body) // tokens)
    return per_token, f"{len(reply.body)} bytes for {tokens} sampled tokens"


def _max_logprobs(client: Client) -> tuple[int | None, str]:
    """The largest logprobs accepted: 64, or the limit a 400 names (past 64: the one past
    FAR_LOGPROBS)."""
    found, said = _largest_accepted(
        client, "logprobs", PROBE_LOGPROBS, LOGPROBS_LIMIT, (20, 5, 1, 0)
    )
    if found is not None:
        return found, said
    found, far = _named_limit(client, "logprobs", FAR_LOGPROBS, LOGPROBS_LIMIT)
    return found, f"{said}; {far}"


def probe_limits(client: Client, model: str | None) -> Limits:
    """Learn the limits of a server whose generate works (a handful of small requests, side by
    side where they can be). The per-token size comes before n = 64: the client's body bound
    grows with it from then on, for the probe's own larger answers as for every check after."""
    evidence: dict[str, str] = {}
    max_model_len, evidence["max_model_len"] = _max_model_len(client, model)
    with ThreadPoolExecutor(2) as pool:  # side by side; the pace is measured alone after
        # One token of greedy logprobs fits the default body bound whatever the per-token
        # outputs: that probe need not wait for the per-token size, as n = 64 does.
        asked_logprobs = pool.submit(_max_logprobs, client)
        per_token, evidence["bytes_per_token"] = _bytes_per_token(client)
        client.bound_for = Limits(max_model_len, bytes_per_token=per_token).body_bound
        asked_n = pool.submit(  # n > 1 needs sampling: greedy is n = 1 only
            _largest_accepted, client, "n", PROBE_N, N_LIMIT, (8, 4, 2, 1), temperature=1.0, seed=1
        )
        max_n, evidence["max_n"] = asked_n.result()
        max_logprobs, evidence["max_logprobs"] = asked_logprobs.result()
    if max_logprobs is not None and max_logprobs < 0:  # vLLM's -1: the whole vocabulary
        max_logprobs = None
    ttft, itl, evidence["pace"] = _pace(client)
    return Limits(max_model_len, max_n, max_logprobs, ttft, itl, per_token, evidence)
