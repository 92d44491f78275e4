"""One output sequence: sampling from the toy model, stop checks, per-token records."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from mock_server.behaviour.config import MockConfig
from mock_server.engine.model import HEAD, Context, ToyModel
from mock_server.engine.tokenizer import IncrementalDetokenizer, Tokenizer
from mock_server.parsing.request import Sampling

Top = list[tuple[int, int, float]] | tuple[()]
"""(token_id, rank, logprob) of the sampled token then the likeliest others; () without
logprobs (one shared empty tuple rather than a list per token)."""


@dataclass(slots=True)
class TokenRecord:
    token_id: int
    rank: int
    logprob: float
    top: Top
    version: str
    support: list[int] | None = None


@dataclass
class Sequence:
    index: int
    records: list[TokenRecord] = field(default_factory=list)
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    detok: IncrementalDetokenizer | None = None

    @property
    def token_ids(self) -> list[int]:
        return [r.token_id for r in self.records]


class Uniforms(Protocol):
    """Where a sequence's uniforms come from: a seeded `random.Random`, or the engine's
    `DrawnAhead` for an unseeded one."""

    def random(self) -> float: ...


class Sampler:
    """Samples one sequence of one request; deterministic for a given rng."""

    def __init__(
        self,
        config: MockConfig,
        model: ToyModel,
        tokenizer: Tokenizer,
        sampling: Sampling,
        prompt: list[int],
        rng: Uniforms,
        max_tokens: int,
        want_text: bool,
    ) -> None:
        self.cfg = config
        self.model = model
        self.tok = tokenizer
        self.sp = sampling
        # the context: the last two tokens, -1 for none (ToyModel.context_for's convention)
        self.t1 = prompt[-2] if len(prompt) > 1 else -1
        self.t2 = prompt[-1] if prompt else -1
        self.rng = rng
        self.max_tokens = max_tokens
        self.limit = 1
        if not sampling.greedy:
            self.limit = model.cutoff(
                sampling.temperature, sampling.top_k, sampling.top_p, sampling.min_p
            )
        self.temperature = 1.0 if sampling.greedy else sampling.temperature  # greedy: no draw
        self.table = model.draw_table(self.temperature, self.limit)
        self.want_text = want_text
        slot = self.slot = config.policies.generate
        ignored = not slot.stop_token_ids_honoured or (
            config.tokens_only and not slot.stop_token_ids_honoured_tokens_only
        )
        self.stop_ids = frozenset(() if ignored else sampling.stop_token_ids)
        allowed = sampling.allowed_token_ids
        self.allowed = sorted(set(allowed)) if allowed else []
        # what `burst` may take its loop for: each token is a rank, a token and a record
        self.plain = (
            not self.allowed and sampling.logprobs is None and not config.return_sampling_mask
        )
        self.greedy_rank = slot.greedy_rank
        self.top_cut = config.release.top_logprobs_cut
        self.watch = self.stop_ids | (
            frozenset() if sampling.ignore_eos else frozenset((tokenizer.eos_id,))
        )
        self.repeats = 0  # first tokens that repeat the context's last (a defect's, under load)

    # What only `step` uses, made when it is first needed (`burst` needs neither).
    @cached_property
    def banned(self) -> set[int]:
        """The tokens min_tokens keeps out: stop ids, and EOS unless ignore_eos."""
        sp = self.sp
        return set(sp.stop_token_ids) | ({self.tok.eos_id} if not sp.ignore_eos else set())

    @cached_property
    def draw(self) -> Callable[[float], int]:
        return self.model.drawer(self.temperature, self.limit)

    def _pick_allowed(self, rank_of: Callable[[int], int], below_min: bool) -> int:
        """allowed_token_ids masks the logits: only those tokens can be sampled (top_k after)."""
        sp = self.sp
        pairs = sorted((rank_of(t), t) for t in self.allowed)
        if below_min and any(t not in self.banned for _, t in pairs):
            pairs = [(r, t) for r, t in pairs if t not in self.banned]
        ranks = [r for r, _ in pairs]
        if sp.greedy:
            return ranks[min(self.greedy_rank, len(ranks)) - 1]
        if 0 < sp.top_k < len(ranks):
            ranks = ranks[: sp.top_k]
        return self.model.sample_among(self.rng.random(), sp.temperature, ranks)

    def new_detokenizer(self) -> IncrementalDetokenizer | None:
        if not (self.want_text or (self.sp.stop and self.cfg.has_tokenizer)):
            return None
        return IncrementalDetokenizer(
            self.tok,
            self.sp.stop,
            self.sp.include_stop_str_in_output and self.slot.include_stop_str_honoured,
            self.sp.skip_special_tokens and self.slot.skip_special_honoured,
            cut_stop=self.slot.cut_stop_string,
        )

    def _pick_rank(self, ctx_rank_token: Callable[[int], int], below_min: bool) -> int:
        sp = self.sp
        if sp.greedy:
            rank = self.greedy_rank
            while below_min and ctx_rank_token(rank) in self.banned:
                rank += 1
            return rank
        for _ in range(64):
            rank = self.draw(self.rng.random())
            if not (below_min and ctx_rank_token(rank) in self.banned):
                return rank
        rank = 1
        while ctx_rank_token(rank) in self.banned:
            rank += 1
        return rank

    def step(self, seq: Sequence, version: str) -> None:
        """Generate one token into `seq` and set its finish state if it ends."""
        model, sp = self.model, self.sp
        ctx = model.context(self.t1, self.t2)
        n_done = len(seq.records)
        below_min = n_done < sp.min_tokens
        if self.repeats and self.t2 >= 0:  # the token before, again: its rank as it stands
            self.repeats -= 1
            rank = ctx.rank_of(self.t2)
        elif self.allowed:
            rank = self._pick_allowed(ctx.rank_of, below_min)
        elif below_min or sp.greedy:
            rank = self._pick_rank(ctx.token_at, below_min)
        else:  # what _pick_rank returns then: its first draw
            rank = self.draw(self.rng.random())
        token = ctx.token_at(rank)
        top: Top = () if sp.logprobs is None else self._top(ctx, token, rank, sp.logprobs)
        support = self._support(ctx) if self.cfg.return_sampling_mask else None
        seq.records.append(
            TokenRecord(token, rank, model.logprobs[rank - 1], top, version, support)
        )
        self.t1, self.t2 = self.t2, token
        self._check_stop(seq, token, n_done + 1)

    def burst(self, seq: Sequence, count: int, version: str) -> None:
        """`step` up to `count` times, fewer when `seq` finishes.

        A plain sequence past its min_tokens, without text, takes a loop of its own: per
        token a rank, the model's token for it and a record, with the stop checks only when
        the token or the count could end it. Two thirds of a short non-streamed request's
        engine time went to `step`'s generality; the tokens and records are the same
        (tests/test_mock_burst.py).
        """
        if (
            not self.plain
            or seq.detok is not None
            or len(seq.records) < self.sp.min_tokens
            or self.repeats
        ):
            for _ in range(count):
                self.step(seq, version)
                if seq.finish_reason is not None:
                    return
            return
        model, records = self.model, seq.records
        token_after, logprobs, watch = model.token_after, model.logprobs, self.watch
        cum, scale, head_end = self.table
        uniform, limit = self.rng.random, self.limit
        greedy, fixed, max_tokens = self.sp.greedy, self.greedy_rank, self.max_tokens
        t1, t2, done = self.t1, self.t2, len(records)
        for _ in range(count):
            if greedy:
                rank = fixed
            else:  # self.draw(uniform()), inlined
                x = uniform() * scale
                rank = (
                    bisect_right(cum, x, 0, HEAD) + 1 if x < head_end else bisect_right(cum, x) + 1
                )
                if rank > limit:
                    rank = limit
            token = token_after(t1, t2, rank)
            records.append(TokenRecord(token, rank, logprobs[rank - 1], (), version))
            t1, t2 = t2, token
            done += 1
            if token in watch or done >= max_tokens:
                self.t1, self.t2 = t1, t2
                self._check_stop(seq, token, done)
                if seq.finish_reason is not None:
                    return
        self.t1, self.t2 = t1, t2

    def _top(self, ctx: Context, token: int, rank: int, k: int) -> list[tuple[int, int, float]]:
        """The sampled token, then the most likely others: max(k, 1) in all (the whole
        vocabulary for -1), or, where the release sends the engine's candidates uncut, the
        top k after it (k + 1 when the sampled token is not among them)."""
        model = self.model
        want = max(k if k >= 0 else model.vocab_size, 1)
        if not self.top_cut and rank > k >= 1:
            want = k + 1
        top = [(token, rank, model.logprob_of_rank(rank))]
        r = 1
        while len(top) < want and r <= model.vocab_size:
            if r != rank:
                top.append((ctx.token_at(r), r, model.logprob_of_rank(r)))
            r += 1
        return top

    def _support(self, ctx: Context) -> list[int]:
        """The tokens sampling could pick (return_sampling_mask)."""
        if self.allowed:
            return list(self.allowed)
        return [ctx.token_at(r) for r in range(1, self.limit + 1)]

    def _check_stop(self, seq: Sequence, token: int, count: int) -> None:
        sp, slot = self.sp, self.slot
        reached_min = count >= sp.min_tokens
        stop_str = seq.detok.add(token) if seq.detok is not None else None
        if reached_min and not sp.ignore_eos and token == self.tok.eos_id:
            seq.finish_reason = "stop"
            seq.stop_reason = token if slot.eos_stop_reason else None
            return
        if reached_min and token in self.stop_ids:
            seq.finish_reason = "stop"
            seq.stop_reason = token if slot.stop_reason_reported else None
            if slot.drop_stop_token:
                seq.records.pop()
            return
        if stop_str is not None and reached_min:
            seq.finish_reason = "stop"
            seq.stop_reason = stop_str if slot.stop_reason_reported else None
            if slot.stop_string_trims:
                seq.records.pop()
            return
        if count >= self.max_tokens:
            seq.finish_reason = "length"
            if slot.length_stop_reason is not None:
                seq.stop_reason = slot.length_stop_reason
