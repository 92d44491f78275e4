"""Unseeded sequences draw their uniforms ahead: the same tokens whatever the interleaving,
and past the block they go on from a generator seeded when they opened."""

from __future__ import annotations

import random

from mock_server.behaviour.config import parse_args
from mock_server.engine.core import DRAWN_AHEAD, DrawnAhead, Engine
from mock_server.engine.sequence import Sampler, Sequence
from mock_server.parsing.request import parse_generate


def test_the_block_then_the_spare_generator_are_the_servers() -> None:
    source = random.Random(5)
    drawn = DrawnAhead(source, 4)
    replay = random.Random(5)
    block = [replay.random() for _ in range(4)]
    spare = random.Random(replay.getrandbits(64))
    assert [drawn.random() for _ in range(10)] == block + [spare.random() for _ in range(6)]
    assert source.getstate() == replay.getstate()  # the server's generator moved on at open


def _open(engine: Engine, max_tokens: int, greedy: bool = False) -> tuple[Sampler, Sequence]:
    sp = {"max_tokens": max_tokens, "ignore_eos": True, **({"temperature": 0} if greedy else {})}
    req = parse_generate({"token_ids": [7, 9], "sampling_params": sp}, engine.cfg)
    rng = engine._rng_for(req, 0, max_tokens)
    sampler = Sampler(
        engine.cfg, engine.model, engine.tokenizer, req.sampling, [7, 9], rng, max_tokens, False
    )
    return sampler, Sequence(index=0)


def test_unseeded_tokens_depend_on_the_order_of_arrival_not_on_the_interleaving() -> None:
    lengths = [5, DRAWN_AHEAD, DRAWN_AHEAD + 40, 3]
    runs = []
    for order in ("one after the other", "round robin"):
        engine = Engine(parse_args(["--enable-scale-out", "--seed", "3"]))
        opened = [_open(engine, n) for n in lengths]
        if order == "one after the other":
            for sampler, seq in opened:
                sampler.burst(seq, 10_000, "v")
        else:
            while any(seq.finish_reason is None for _, seq in opened):
                for sampler, seq in opened:
                    if seq.finish_reason is None:
                        sampler.step(seq, "v")
        runs.append([seq.token_ids for _, seq in opened])
    assert runs[0] == runs[1]
    assert [len(t) for t in runs[0]] == lengths
    assert len({tuple(t[:3]) for t in runs[0]}) == len(lengths)  # each its own draws


def test_a_greedy_sequence_takes_no_uniforms() -> None:
    engine = Engine(parse_args(["--enable-scale-out", "--seed", "3"]))
    before = engine._rng.getstate()
    sampler, seq = _open(engine, 20, greedy=True)
    sampler.burst(seq, 20, "v")
    after = random.Random()
    after.setstate(before)
    after.getrandbits(64)  # only the spare generator's seed
    assert engine._rng.getstate() == after.getstate()
