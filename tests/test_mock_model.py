"""The toy model's promises: a permutation per context, exact and strictly ordered rank
probabilities, EOS at rank 3 in one context in 8, and contexts spread over the multipliers."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from mock_server.engine.model import EOS_RANK, UNITS, ToyModel


@pytest.mark.parametrize("vocab", [512, 2048])
def test_each_context_is_a_permutation_of_the_vocabulary(vocab: int) -> None:
    model = ToyModel(vocab, vocab - 1)
    for t1, t2 in [(-1, -1), (-1, 0), (3, 7), (vocab - 1, 5), (100, vocab - 1)]:
        ctx = model.context(t1, t2)
        tokens = [ctx.token_at(r) for r in range(1, vocab + 1)]
        assert sorted(tokens) == list(range(vocab))
        assert all(ctx.rank_of(t) == r for r, t in enumerate(tokens, 1))


def test_rank_probabilities_are_exact_and_strictly_decreasing() -> None:
    model = ToyModel(151936, 151643)
    assert math.isclose(sum(model.probs), 1.0, rel_tol=1e-9)
    assert all(a > b for a, b in zip(model.probs, model.probs[1:], strict=False))
    assert all(
        math.isclose(math.exp(lp), p) for lp, p in zip(model.logprobs, model.probs, strict=True)
    )


def test_eos_is_rank_three_in_one_context_in_eight_and_never_rank_one() -> None:
    model = ToyModel(151936, 151643)
    ranks = Counter(model.context(t1, t2).rank_of(151643) for t1 in range(60) for t2 in range(60))
    assert ranks[1] == 0
    assert 0.10 < ranks[EOS_RANK] / 3600 < 0.15


def test_contexts_spread_over_the_multipliers_and_differ_by_server_seed() -> None:
    model, other = ToyModel(151936, 151643), ToyModel(151936, 151643, seed=1)
    firsts = {model.context(t1, t2).a for t1 in range(120) for t2 in range(120)}
    assert len(firsts) > UNITS * 0.85  # 14,400 contexts over 4,096 multipliers (97% expected)
    same = sum(
        model.context(t1, t2).token_at(1) == other.context(t1, t2).token_at(1)
        for t1 in range(30)
        for t2 in range(30)
    )
    assert same < 5
    assert ToyModel(151936, 151643).context(5, 9).token_at(1) == model.context(5, 9).token_at(1)


def test_the_context_hash_is_pinned() -> None:
    """Every token the mock generates follows from this hash: a Python whose tuple hash
    differed would change them all, so the values are pinned here."""
    model = ToyModel(151936, 151643)
    assert [model._hash(t1, t2) for t1, t2 in [(-1, -1), (5, 9), (151935, 0)]] == [
        597940633698406083,
        14799963767332085591,
        8981492759516488644,
    ]
    assert ToyModel(151936, 151643, seed=7)._hash(5, 9) == 14689248726243747330


def test_offsets_spread_evenly() -> None:
    model, vocab = ToyModel(151936, 151643), 151936
    bins = Counter(model.context(t1, t2).b * 64 // vocab for t1 in range(120) for t2 in range(120))
    expected = 120 * 120 / 64
    assert sum((n - expected) ** 2 / expected for n in bins.values()) < 120  # df 63
