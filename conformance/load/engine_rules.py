"""The load run's rules that read more than the answer: what the engines said of a request
while it ran (`engines`: the rank that held a pinned stream, whether a hung-up stream was let
go), and the greedy ranks an answer's own logprobs state.

Each raises AssertionError (`semantics.fail`) with field-level evidence, or returns how many
it judged (0: nothing to judge here), as `conformance.tito.rules`' do.
"""

from __future__ import annotations

from conformance.inflight.proof import Proof
from conformance.load.engines import Read, grace_s
from conformance.load.mix import Facts
from conformance.tito import semantics
from conformance.tito.answers import Answer


def rank_held(reads: list[Read], rank: int | None, rid: str) -> int:
    """DP-001: a pinned request runs on its rank, where the engines name who holds it."""
    named = [r for r in reads if r.held and r.ranks]
    if rank is None or not named:
        return 0
    pinned = str(rank)
    for found in named:
        if pinned not in found.ranks:
            semantics.fail(
                f"stream {rid} pinned with X-data-parallel-rank: {pinned}; the engines said "
                f"rank(s) {list(found.ranks)} held it (held_by_rank, read at "
                f"{found.answered * 1000:.0f} ms while it streamed)"
            )
    return 1


def let_go(reads: list[Read], facts: Facts, left: int, rid: str) -> int:
    """ABORT-009: a stream whose client hung up is let go by the engines. Judged where they
    name what they hold: let go when a read after the hang-up no longer finds it while its
    `left` tokens were still to come at the learned pace (or once it was seen held), kept when
    a read sent once the grace had passed since the hang-up still finds it (`proof.ENGINE`: a
    slower client only reads later, when a correct server has let go all the more surely)."""
    if not reads:
        return 0
    last = reads[-1]
    if not last.held:
        due = (facts.itl_s or 0.0) * left  # when it would have ended on its own
        return 1 if len(reads) > 1 or due > last.answered else 0
    if len(reads) < 2:
        return 0
    grace = grace_s(facts.itl_s, facts.ttft_s)
    heard = "named it among those whose client went away" if last.hung_up else "held it"
    semantics.fail(
        f"stream {rid}: the client hung up; evidence ({Proof.ENGINE}): the engines held it at "
        f"{reads[0].answered * 1000:.0f} ms and a read sent at {last.sent * 1000:.0f} ms, "
        f"{grace * 1000:.0f} ms or more after the hang-up, still {heard} (/mock/stats)"
    )
    return 1  # not reached: fail raises


def greedy_ranks(answer: Answer) -> int:
    """GEN-REQ-006: temperature 0 samples the most likely token (rank 1) at every step,
    where the answer's logprobs rank what it sampled."""
    params = answer.params
    if params.get("temperature") != 0 or params.get("logprobs") is None:
        return 0
    judged = 0
    for choice in answer.choices:
        logprobs = choice.get("logprobs")
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        if not isinstance(content, list) or not content:
            continue
        judged += 1
        for i, entry in enumerate(content):
            rank = entry.get("rank") if isinstance(entry, dict) else None
            if rank not in (1, None):
                semantics.fail(
                    f"{answer.what}, choice {choice.get('index')}: temperature 0 sampled token "
                    f"{entry.get('token_id')} of rank {rank} at position {i} of "
                    f"{len(content)} (rank 1 expected)"
                )
    return judged
