"""A deterministic toy language model whose whole distribution is known exactly.

For each context (the last two tokens) the model is a permutation of the vocabulary onto
ranks plus one fixed probability per rank, so any token's logprob and its 1-based rank in the
full vocabulary are O(1): `rank_of(t)` is an affine map modulo V, `token_at(rank)` its inverse.
The rank probabilities decrease strictly (no ties, so ranks are exact): a head of 16 ranks
with most of the mass and a slowly decreasing tail over the rest of the vocabulary.

EOS is reachable: in one context out of 8 it is swapped to rank 3, so sampling at temperature 1
ends with EOS now and then, while greedy decoding (rank 1) never picks EOS.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from functools import cache, lru_cache
from math import gcd

_MASK = (1 << 64) - 1
HEAD = 16
HEAD_DECAY = 0.45
TAIL_MASS = 0.1
EOS_RANK = 3


def _mix(x: int) -> int:
    """splitmix64 finaliser: a cheap, well-spread 64-bit hash."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


class Context:
    """The permutation for one context."""

    __slots__ = ("a", "a_inv", "b", "eos_swap", "eos_natural", "v", "eos")

    def __init__(self, a: int, a_inv: int, b: int, eos_swap: bool, v: int, eos: int) -> None:
        self.v = v
        self.a = a
        self.a_inv = a_inv
        self.b = b
        self.eos = eos
        self.eos_swap = eos_swap
        self.eos_natural = (a * eos + b) % v

    def rank_of(self, token_id: int) -> int:
        """1-based rank of a token in the full vocabulary."""
        idx = (self.a * token_id + self.b) % self.v
        if self.eos_swap:
            if token_id == self.eos:
                idx = EOS_RANK - 1
            elif idx == EOS_RANK - 1:
                idx = self.eos_natural
        return idx + 1

    def token_at(self, rank: int) -> int:
        idx = rank - 1
        if self.eos_swap:
            if idx == EOS_RANK - 1:
                return self.eos
            if idx == self.eos_natural:
                idx = EOS_RANK - 1
        return ((idx - self.b) * self.a_inv) % self.v


UNITS = 4096
"""How many multipliers the contexts' affine maps draw from."""


@cache
def _units(v: int) -> tuple[tuple[int, int], ...]:
    """UNITS multipliers coprime with v, each with its inverse modulo v (a few ms, once)."""
    out = []
    for k in range(UNITS):
        a = (_mix(k) >> 20) % v | 1
        while gcd(a, v) != 1:
            a = (a + 2) % v
        out.append((a, pow(a, -1, v)))
    return tuple(out)


@cache
def _rank_distribution(v: int) -> tuple[list[float], list[float]]:
    """Probability and logprob per rank; shared by every server with the same vocabulary."""
    head = [math.exp(-HEAD_DECAY * r) for r in range(HEAD)]
    head_sum = sum(head)
    tail_n = v - HEAD
    # tail weight w(i) = c * (2 - i / tail_n) for i in 0..tail_n-1, strictly decreasing
    tail_units = 2 * tail_n - (tail_n - 1) / 2
    c = TAIL_MASS / (1 - TAIL_MASS) * head_sum / tail_units
    weights = head + [c * (2 - i / tail_n) for i in range(tail_n)]
    total = sum(weights)
    probs = [w / total for w in weights]
    return probs, [math.log(p) for p in probs]


class ToyModel:
    def __init__(self, vocab_size: int, eos_id: int, seed: int = 0) -> None:
        self.vocab_size = vocab_size
        self.eos_id = eos_id
        self._seed = _mix(seed)
        self._units = _units(vocab_size)
        self.probs, self.logprobs = _rank_distribution(vocab_size)
        self._cum = self._cumulative(1.0)

    def _hash(self, t1: int, t2: int) -> int:
        """A context's hash: the interpreter's hash of the salted pair, as 64 bits.

        A tuple of ints hashes in C (xxHash's rounds, stable since Python 3.8; pinned by
        tests/test_mock_model.py), about a fifth of a splitmix round's cost in Python, which
        was the largest single cost of a generated token. Per-context statistics are those of
        a random function (tests/test_mock_model.py).
        """
        return hash((self._seed, t1, t2)) & _MASK

    @lru_cache(maxsize=256)  # noqa: B019 - one model per server; contexts repeat a lot
    def context(self, t1: int, t2: int) -> Context:
        # The pair's hash: bits 0-2 pick the EOS swap, 3-14 the multiplier
        # (from a table: no gcd or modular inverse per context), the rest the offset.
        h = self._hash(t1, t2)
        a, a_inv = self._units[(h >> 3) % UNITS]
        v = self.vocab_size
        return Context(a, a_inv, (h >> 15) % v, h % 8 == 0, v, self.eos_id)

    def token_after(self, t1: int, t2: int, rank: int) -> int:
        """`context(t1, t2).token_at(rank)` in one call, for the per-token loop: no lookup in
        the context cache (most contexts of a random walk are new) and no Context made."""
        h = hash((self._seed, t1, t2)) & _MASK  # self._hash(t1, t2), without the call
        a, a_inv = self._units[(h >> 3) % UNITS]
        v = self.vocab_size
        b = (h >> 15) % v
        idx = rank - 1
        if h % 8 == 0:  # the EOS swap
            if idx == EOS_RANK - 1:
                return self.eos_id
            if idx == (a * self.eos_id + b) % v:
                idx = EOS_RANK - 1
        return ((idx - b) * a_inv) % v

    def context_for(self, tokens: list[int]) -> Context:
        t1 = tokens[-2] if len(tokens) > 1 else -1
        return self.context(t1, tokens[-1] if tokens else -1)

    def logprob_of_rank(self, rank: int) -> float:
        return self.logprobs[rank - 1]

    @lru_cache(maxsize=8)  # noqa: B019
    def _cumulative(self, temperature: float) -> list[float]:
        """Cumulative tempered weights by rank (unnormalised)."""
        if temperature == 1.0:
            weights = self.probs
        else:
            inv = 1.0 / temperature
            weights = [p**inv for p in self.probs]
        out: list[float] = []
        acc = 0.0
        for w in weights:
            acc += w
            out.append(acc)
        return out

    def cutoff(self, temperature: float, top_k: int, top_p: float, min_p: float) -> int:
        """How many top ranks survive top_k / top_p / min_p on the tempered distribution."""
        v = self.vocab_size
        limit = top_k if 0 < top_k < v else v
        cum = self._cumulative(temperature)
        total = cum[-1]
        if top_p < 1.0:
            limit = min(limit, bisect.bisect_left(cum, top_p * total) + 1)
        if min_p > 0.0:
            threshold = min_p * cum[0]  # weight of rank 1
            weights_desc = self._weights_at(temperature)
            lo, hi = 1, limit
            while lo < hi:  # largest rank whose weight >= threshold
                mid = (lo + hi + 1) // 2
                if weights_desc(mid) >= threshold:
                    lo = mid
                else:
                    hi = mid - 1
            limit = min(limit, lo)
        return max(1, limit)

    def _weights_at(self, temperature: float) -> Callable[[int], float]:
        cum = self._cumulative(temperature)
        return lambda rank: cum[rank - 1] - (cum[rank - 2] if rank > 1 else 0.0)

    def sample_among(self, u: float, temperature: float, ranks: list[int]) -> int:
        """Inverse-CDF sample of one of `ranks` (ascending), weighted as the tempered model."""
        weight = self._weights_at(temperature)
        weights = [weight(r) for r in ranks]
        target, acc = u * sum(weights), 0.0
        for rank, w in zip(ranks, weights, strict=True):
            acc += w
            if target < acc:
                return rank
        return ranks[-1]

    def draw_table(self, temperature: float, limit: int) -> tuple[list[float], float, float]:
        """What a draw reads: the cumulative weights, the weight of ranks 1..limit, and of
        the head's ranks (`drawer`, and `Sampler.burst`'s loop, which inlines it)."""
        cum = self._cumulative(temperature)
        return cum, cum[limit - 1], cum[HEAD - 1]

    def drawer(self, temperature: float, limit: int) -> Callable[[float], int]:
        """Inverse-CDF sampling of a rank in 1..limit: `draw(u)` for a uniform u in [0, 1).

        Most draws land in the head: searching its HEAD entries first gives the same index as
        searching the whole list (the list is sorted) without walking a vocabulary-sized list
        of floats scattered over memory. Made once per sequence: a draw is then one call.
        """
        cum, scale, head_end = self.draw_table(temperature, limit)
        bisect_right = bisect.bisect_right

        def draw(u: float) -> int:
            x = u * scale
            if x < head_end:
                return min(limit, bisect_right(cum, x, 0, HEAD) + 1)
            return min(limit, bisect_right(cum, x) + 1)

        return draw
