"""Request lifecycle: capacity queueing, abort registry, weight labels, stats, timing."""

from __future__ import annotations

import asyncio
import random
import secrets
import time
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from mock_server.behaviour.config import MockConfig
from mock_server.engine.model import ToyModel
from mock_server.engine.scheduler import Scheduler
from mock_server.engine.sequence import Sampler, Sequence, Uniforms
from mock_server.engine.tokenizer import Tokenizer
from mock_server.parsing.request import GenerateRequest


@dataclass
class Job:
    """One admitted generate request (all its n sequences)."""

    request_id: str
    req: GenerateRequest
    max_tokens: int
    abort_after: int | None = None
    rank: int = 0  # the data-parallel rank that runs it (its pin, or the least busy)
    pinned: int | None = None  # the rank its X-data-parallel-rank header asked for
    sequences: list[Sequence] = field(default_factory=list)
    aborted: asyncio.Event = field(default_factory=asyncio.Event)
    gone: bool = False  # its client went away while the engine held it
    crowd: int = 0  # requests in flight when it was opened, itself included
    queued_behind: int = 0  # requests waiting ahead of it when it had to queue
    skewed: bool = False  # a label change came while the engine was busy (label_skew_above)
    _sleeping: asyncio.Future[None] | None = field(default=None, repr=False)

    @property
    def unfinished(self) -> bool:
        """Some sequence still has tokens to come (or none has started): what `held` means. A
        stream whose tokens are all made but not yet all written is no longer held."""
        return not self.sequences or any(seq.finish_reason is None for seq in self.sequences)

    def abort(self) -> None:
        self.aborted.set()
        if self._sleeping is not None and not self._sleeping.done():
            self._sleeping.set_result(None)

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds`, or until the job is aborted. One future and one timer: waiting on
        `aborted` under `asyncio.wait_for` made a task per token step, ~50 us each, a third of
        the mock's CPU in a suite run (one step at a time per job: `run` and `complete`)."""
        if self.aborted.is_set():
            return
        loop = asyncio.get_running_loop()
        self._sleeping = waiter = loop.create_future()
        timer = loop.call_later(seconds, _wake, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._sleeping = None


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


# Without --mock-itl-ms the engine runs as fast as it can; it still hands the event loop to
# other requests, but after about YIELD_EVERY tokens rather than after every one: a loop round trip
# per token cost as much as the rest of the token's path. An abort or a hang-up still lands
# within YIELD_EVERY tokens; with a latency set, every step waits as before.
YIELD_EVERY = 16


def steps_between_yields(sequences: int) -> int:
    """Steps between hand-overs, so each moves about YIELD_EVERY tokens whatever `n`: a request
    of 64 sequences hands over after every step, as vLLM's API server answers an abort while
    its engine steps (its engine runs apart), not after 1,024 tokens."""
    return max(1, YIELD_EVERY // max(1, sequences))


RESUME_REPEAT_KEPT = 1
"""Tokens a request admitted soon after a resume repeats (`Generate.resume_repeat_s`)."""

DRAWN_AHEAD = 32
"""How many uniforms an unseeded sequence takes from the server's generator when it opens."""


class DrawnAhead:
    """An unseeded sequence's uniforms: drawn from the server's generator when the sequence
    opens, so its tokens depend on the order requests arrive in, not on how they interleave.

    Seeding a Mersenne Twister per sequence (what a seeded request still gets) cost 6-7 us, a
    twentieth of a short request. Most sequences need at most one uniform per token and end
    within DRAWN_AHEAD tokens; one that needs more goes on with a generator seeded, also when
    the sequence opened, from the server's, and made only then.
    """

    __slots__ = ("random",)

    def __init__(self, source: random.Random, count: int) -> None:
        draw = source.random
        block = [draw() for _ in range(count)]
        self.random: Callable[[], float] = chain(block, _more(source.getrandbits(64))).__next__


def _more(seed: int) -> Iterator[float]:
    draw = random.Random(seed).random
    while True:
        yield draw()


@dataclass(slots=True)
class Event:
    """New output of one sequence: its new tokens (by record offset) and whether it ended.

    `flush`: the engine hands the loop over (or waits) before its next event, so whatever a
    consumer holds back should go out now.
    """

    seq: Sequence
    start: int
    finished: bool
    flush: bool = True


class Engine:
    def __init__(self, config: MockConfig) -> None:
        self.cfg = config
        self.tokenizer = Tokenizer(config.mock_vocab_size)
        self.model = ToyModel(config.mock_vocab_size, self.tokenizer.eos_id, config.seed)
        self.scheduler = Scheduler(config.max_num_seqs)
        self.weight_version = "default"
        self._rng = random.Random(config.seed)
        self._ids = random.Random(secrets.randbits(64))
        self._jobs: dict[str, list[Job]] = {}
        self.received = 0
        self.in_flight = 0
        self.aborted = 0
        self.finished: Counter[str] = Counter()
        self.on_rank = [0] * max(1, config.data_parallel_size)  # requests each rank holds
        self.resumed_at: float | None = None  # when /resume last ended a pause
        self.dead = False

    # -- bookkeeping -------------------------------------------------------------------
    def counts(self) -> dict[str, Any]:
        """The counters alone (`/metrics`): no walk over the requests held."""
        return {
            "received": self.received,
            "in_flight": self.in_flight,
            "queued": self.scheduler.queued,
            "finished": {"stop": 0, "length": 0, "abort": 0, **self.finished},
            "aborted": self.aborted,
        }

    def stats(self) -> dict[str, Any]:
        """The counters, and the requests held now. Nothing here outlives its request: the
        lists name only what the engine holds (bounded by what is in flight), so a long run
        leaves them no longer than its busiest moment."""
        held: list[str] = []
        hung_up: list[str] = []
        by_rank: dict[str, list[str]] = {str(r): [] for r in range(len(self.on_rank))}
        for rid, jobs in self._jobs.items():
            holding = [j for j in jobs if j.unfinished]
            if not holding:
                continue
            held.append(rid)
            if any(j.gone for j in holding):
                hung_up.append(rid)
            for rank in sorted({j.rank for j in holding}):
                by_rank[str(rank)].append(rid)
        held.sort()
        return {
            **self.counts(),
            # the ids of the requests the engine holds (queued or running): a client reads
            # whether its abort or hang-up took without waiting for the request's answer
            "held": held,
            # the held ones whose client went away: what the HTTP layer saw, while the engine
            # still holds the request (an aborted or ended request leaves the list)
            "hung_up": sorted(hung_up),
            # the held ones by the data-parallel rank that runs them (one rank: "0")
            "held_by_rank": {rank: sorted(ids) for rank, ids in by_rank.items()},
        }

    def running_on(self) -> list[int]:
        """Requests each data-parallel rank holds (queued or running), by rank."""
        return list(self.on_rank)

    def client_gone(self, request_id: str) -> None:
        """The client of `request_id` went away: marked on what the engine still holds."""
        for job in self._jobs.get(request_id, []):
            if job.unfinished:
                job.gone = True

    def place(self, job: Job, pinned: int | None) -> None:
        """The rank that runs `job`: its pin, else the least busy one (vLLM's DP balancer);
        a pin past `Admit.pins_ignored_above` requests on its rank goes elsewhere."""
        load = self.on_rank
        job.pinned = pinned
        if pinned is not None and 0 <= pinned < len(load):
            above = self.cfg.policies.admit.pins_ignored_above
            if above is None or load[pinned] <= above or len(load) < 2:
                job.rank = pinned
                return
            job.rank = min((r for r in range(len(load)) if r != pinned), key=load.__getitem__)
            return
        job.rank = min(range(len(load)), key=load.__getitem__)

    def resumed(self) -> None:
        """A pause ended (`/resume`)."""
        self.resumed_at = time.monotonic()

    def set_weight_version(self, label: str) -> None:
        slot = self.cfg.policies.generate
        if not slot.weight_updates:
            return
        above = slot.label_skew_above
        if above is not None and label != self.weight_version:
            running = [j for jobs in self._jobs.values() for j in jobs if j.unfinished]
            if len(running) > above:  # busy: each running one's boundary comes out skewed
                for job in running:
                    job.skewed = True
        self.weight_version = label

    def _label(self) -> str:
        """The label new tokens carry (what /weight_info reports)."""
        if self.weight_version == "default":
            return self.cfg.policies.generate.default_label
        return self.weight_version

    def new_request_id(self) -> str:
        """16 hex digits, like `secrets.token_hex(8)` but without a system call per request
        (ids need to be unique, not secret; the generator is seeded from the OS at start)."""
        return f"{self._ids.getrandbits(64):016x}"

    def abort(self, request_ids: list[str]) -> int:
        """Abort every running request carrying one of the ids; unknown ids are ignored."""
        admit = self.cfg.policies.admit
        if not admit.aborts_honoured:
            return 0
        if admit.aborts_ignored_above is not None and self.in_flight > admit.aborts_ignored_above:
            return 0  # busy: the abort is answered and lost
        count = 0
        for rid in request_ids:
            for job in self._jobs.get(rid, []):
                if not job.aborted.is_set():
                    job.abort()
                    count += 1
        return count

    def abort_all(self) -> int:
        return self.abort(list(self._jobs))

    def _rng_for(self, req: GenerateRequest, index: int, max_tokens: int) -> Uniforms:
        seed, slot = req.sampling.seed, self.cfg.policies.generate
        if seed is None or not slot.seeded:
            ahead = 0 if req.sampling.greedy else min(max_tokens, DRAWN_AHEAD)
            return DrawnAhead(self._rng, ahead)
        if req.output_mode == "text":
            seed += slot.text_seed_offset
        return random.Random(f"{seed}:{index}")

    # -- generation --------------------------------------------------------------------
    def _open(self, job: Job) -> tuple[int, list[Sampler]]:
        """Register a job and make its samplers (drawing from the server's generator now)."""
        req, cfg = job.req, self.cfg
        n = req.sampling.n if cfg.policies.generate.n_honoured else 1
        want_text = req.output_mode == "text" and cfg.has_tokenizer
        samplers = [
            Sampler(
                cfg,
                self.model,
                self.tokenizer,
                req.sampling,
                req.token_ids,
                self._rng_for(req, i, job.max_tokens),
                job.max_tokens,
                want_text,
            )
            for i in range(n)
        ]
        repeat = cfg.policies.generate.resume_repeat_s
        since = None if self.resumed_at is None else time.monotonic() - self.resumed_at
        if repeat is not None and since is not None and since <= repeat:
            for sampler in samplers:
                sampler.repeats = RESUME_REPEAT_KEPT
        for i, sampler in enumerate(samplers):
            job.sequences.append(Sequence(index=i, detok=sampler.new_detokenizer()))
        self._jobs.setdefault(job.request_id, []).append(job)
        self.in_flight += 1
        self.on_rank[job.rank] += 1
        job.crowd = self.in_flight
        return n, samplers

    def _close(self, job: Job, n: int, admitted: bool) -> None:
        if admitted:
            self.scheduler.release(n)
        self.in_flight -= 1
        self.on_rank[job.rank] -= 1
        jobs = self._jobs.get(job.request_id, [])
        if job in jobs:
            jobs.remove(job)
        if not jobs:
            self._jobs.pop(job.request_id, None)
        for seq in job.sequences:
            self.finished[seq.finish_reason or "abort"] += 1
        if any(seq.finish_reason == "abort" for seq in job.sequences):
            self.aborted += 1

    def _start(
        self, job: Job, samplers: list[Sampler], admitted: bool
    ) -> tuple[list[tuple[Sequence, Sampler]], float]:
        """The set-up of `_steps`, once per job: the sequences to step (none unless
        admitted) with their samplers, and the seconds between steps; a job told to abort
        after 0 steps is aborted here, before its first step."""
        active = list(zip(job.sequences, samplers, strict=True)) if admitted else []
        itl = self.cfg.mock_itl_ms / 1000
        if job.abort_after is not None and job.abort_after <= 0:
            job.abort()
        return active, itl

    def run(self, job: Job) -> AsyncGenerator[Event, None]:
        """Drive one job; yields per-sequence events; always finishes every sequence."""
        return self._steps(job, None, events=True)

    async def complete(self, job: Job, on_wait: Callable[[], None]) -> None:
        """`run` for a non-streamed request, which reads no events: the same tokens, waits
        and bookkeeping, without an event per token.

        `on_wait()` is called before the job first hands the event loop over (to wait for a
        slot, for a latency, or to let other requests run): until then nothing else can run,
        so a request that completes in one go needs no disconnect watcher.
        """
        async for _ in self._steps(job, on_wait, events=False):
            pass  # yields nothing: the loop runs to its end at the first step

    async def _steps(
        self, job: Job, on_wait: Callable[[], None] | None, events: bool
    ) -> AsyncGenerator[Event, None]:
        """The one step loop of `run` (`events`: one per sequence per step) and `complete`
        (none: each sequence steps up to the next hand-over or abort point in one burst).

        Both make the same tokens with the same waits: every sequence draws from its own
        generator, and the loop hands over (or waits) at the same steps either way.
        """
        cfg = self.cfg
        n, samplers = self._open(job)
        admitted = False
        try:
            admitted = self.scheduler.try_acquire(n)
            if not admitted:
                job.queued_behind = self.scheduler.queued
                if on_wait is not None:
                    on_wait()
                    on_wait = None
                admitted = await self.scheduler.acquire(n, job.aborted)
            if admitted and cfg.mock_ttft_ms > 0:
                if on_wait is not None:
                    on_wait()
                    on_wait = None
                await job.sleep(cfg.mock_ttft_ms / 1000)
            active, itl = self._start(job, samplers, admitted)
            per = steps_between_yields(len(active))
            step = 0
            while active and not job.aborted.is_set():
                if step > 0 and (itl > 0 or step % per == 0):
                    if on_wait is not None:
                        on_wait()
                        on_wait = None
                    if itl > 0:
                        await job.sleep(itl)
                        if job.aborted.is_set():
                            break
                    else:
                        await asyncio.sleep(0)
                label = self._label()
                if events:
                    step += 1
                    pause = itl > 0 or step % per == 0  # before the next step
                    last = active[-1][0]
                    # One step makes every sequence's token before any is handed on, as an
                    # engine step does: an abort that comes in while the events are written
                    # finds each sequence either ended by this step or still to be cut.
                    starts = [len(seq.records) for seq, _ in active]
                    for seq, sampler in active:
                        sampler.step(seq, label)
                    still = []
                    for (seq, sampler), start in zip(active, starts, strict=True):
                        done = seq.finish_reason is not None
                        yield Event(seq, start, done, pause and seq is last)
                        if not done:
                            still.append((seq, sampler))
                else:
                    # The steps up to the next hand-over or abort point, sequence by
                    # sequence: nothing else runs in between, and each sequence draws from
                    # its own rng. An abort that came in during the hand-over still gets
                    # the one step the events' loop makes.
                    count = 1 if itl > 0 or job.aborted.is_set() else per - step % per
                    if job.abort_after is not None and job.abort_after > step:
                        count = min(count, job.abort_after - step)
                    step += count
                    still = []
                    for seq, sampler in active:
                        sampler.burst(seq, count, label)
                        if seq.finish_reason is None:
                            still.append((seq, sampler))
                active = still
                if job.abort_after is not None and step >= job.abort_after and active:
                    job.abort()
            for seq in self._end_unfinished(job):
                if events:
                    yield Event(seq, len(seq.records), True)
        finally:
            self._close(job, n, admitted)

    def _end_unfinished(self, job: Job) -> Iterator[Sequence]:
        """The sequences an abort cut short, each ended as aborted as it is reached (`run`
        yields its event before the next one ends; `complete` ends them all)."""
        reason = self.cfg.policies.generate.abort_stop_reason
        for seq in [seq for seq in job.sequences if seq.finish_reason is None]:
            seq.finish_reason = "abort"
            if reason is not None:
                seq.stop_reason = reason
            yield seq
