"""`Sampler.burst` makes what `Sampler.step` makes, and `ToyModel.token_after` is the context's
`token_at`: the non-streamed path's per-token loop (issue 11) changes no token or record."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mock_server.behaviour.config import parse_args
from mock_server.engine.core import Engine
from mock_server.engine.sequence import Sampler, Sequence
from mock_server.parsing.request import parse_generate

# Defects that act in the per-token path: each changes a rank, a reason or a record.
DEFECTS = [
    "greedy-not-greedy",
    "stop-token-dropped",
    "eos-stop-reason-set",
    "stop-reason-null",
    "length-stop-reason-set",
    "stop-token-ids-ignored",
]


@settings(max_examples=300, deadline=None)
@given(
    vocab=st.sampled_from([512, 2048, 151936]),
    t1=st.integers(-1, 511),
    t2=st.integers(-1, 511),
    rank=st.integers(1, 512),
    seed=st.integers(0, 2**32),
)
def test_token_after_is_the_contexts_token_at(
    vocab: int, t1: int, t2: int, rank: int, seed: int
) -> None:
    engine = Engine(parse_args(["--mock-vocab-size", str(vocab), "--seed", str(seed)]))
    model = engine.model
    assert model.token_after(t1, t2, rank) == model.context(t1, t2).token_at(rank)
    eos_rank = model.context(t1, t2).rank_of(model.eos_id)
    assert model.token_after(t1, t2, eos_rank) == model.eos_id


_SAMPLING = st.fixed_dictionaries(
    {"max_tokens": st.integers(1, 80)},
    optional={
        "temperature": st.sampled_from([0, 0.001, 0.5, 1.0, 1.7]),
        "top_k": st.sampled_from([-1, 1, 3, 40]),
        "top_p": st.sampled_from([0.3, 0.9, 1.0]),
        "min_p": st.sampled_from([0.0, 0.05, 0.5]),
        "seed": st.integers(0, 1000),
        "min_tokens": st.integers(0, 30),
        "ignore_eos": st.booleans(),
        "stop_token_ids": st.lists(st.integers(0, 511), max_size=40),
        "logprobs": st.sampled_from([0, 2]),
        "allowed_token_ids": st.lists(st.integers(0, 511), min_size=1, max_size=6),
        "stop": st.sampled_from([["a"], ["e", "o"]]),
    },
)


def _drive(argv: list[str], sp: dict[str, Any], prompt: list[int], counts: list[int] | None) -> Any:
    """The sequence `step` by `step` (counts None) or in bursts of `counts`, cycled."""
    cfg = parse_args(["--enable-scale-out", "--mock-vocab-size", "512", *argv])
    engine = Engine(cfg)
    sp = {**sp, "min_tokens": min(sp.get("min_tokens", 0), sp["max_tokens"])}
    if sp.get("temperature", 1.0) < 1e-5:
        sp.pop("seed", None)
    req = parse_generate({"token_ids": prompt, "sampling_params": sp}, cfg)
    sampler = Sampler(
        cfg,
        engine.model,
        engine.tokenizer,
        req.sampling,
        prompt,
        engine._rng_for(req, 0, sp["max_tokens"]),  # the seed, or the server generator
        sp["max_tokens"],
        False,
    )
    seq = Sequence(index=0, detok=sampler.new_detokenizer())
    turn = 0
    while seq.finish_reason is None:
        if counts is None:
            sampler.step(seq, "v1")
        else:
            sampler.burst(seq, counts[turn % len(counts)], "v1")
            turn += 1
    return seq.records, seq.finish_reason, seq.stop_reason, (sampler.t1, sampler.t2)


@settings(max_examples=400, deadline=None)
@given(
    sp=_SAMPLING,
    defects=st.lists(st.sampled_from(DEFECTS), max_size=2, unique=True),
    prompt=st.lists(st.integers(0, 511), min_size=1, max_size=3),
    counts=st.lists(st.integers(1, 20), min_size=1, max_size=4),
)
def test_burst_makes_what_step_makes(
    sp: dict[str, Any], defects: list[str], prompt: list[int], counts: list[int]
) -> None:
    argv = [arg for name in defects for arg in ("--mock-defect", name)]
    assert _drive(argv, sp, prompt, counts) == _drive(argv, sp, prompt, None)


def test_the_plain_loop_ends_by_eos_stop_id_and_length() -> None:
    """The comparison above is not vacuous: plain sequences end by EOS, stop id and length."""
    reasons = set()
    for seed in range(40):
        sp: dict[str, Any] = {"max_tokens": 2 + seed % 30, "seed": seed}
        records, finish, stop_reason, _ = _drive([], sp, [3], [16])
        reasons.add((finish, stop_reason))
        if len(records) > 1 and finish == "length":  # again, its last token a stop id
            stop_id = records[-1].token_id
            again = _drive([], {**sp, "stop_token_ids": [stop_id]}, [3], [16])
            first = [r.token_id for r in records].index(stop_id)
            assert again[1:3] == ("stop", stop_id) and again[0] == records[: first + 1]
            reasons.add(("stop", "id"))
    assert reasons == {("stop", None), ("length", None), ("stop", "id")}
