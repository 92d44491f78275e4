"""Master and workers on Locust: one path for a run here and a run across hosts.

The master never sends a generate request: it probes the server (the caller's `Session.open`),
tells each worker the plan when it connects (`tito_plan`: the facts, the mix, its share of
`--requests`), starts the users (Locust spreads them over the workers), runs the weight-sync
cycles (`cycles`), tells the workers of each pause and label (`tito_pause`, `tito_label`) and
at the end to drain (`tito_drain`: no new request, finish what runs). Each worker judges its
own answers and adds what changed to Locust's periodic worker report (`report_to_master`);
the master folds every report into one `Tally` (`worker_report`). `--workers N` starts N
worker processes here; `--master` waits for workers started elsewhere with `--worker
--master-host H`. The run ends once every worker reported itself drained.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gevent
import locust.runners
from locust.env import Environment

from conformance.load.cycles import Cycles
from conformance.load.rollout import WorkerState, bound
from conformance.load.tally import Tally

REPORT_INTERVAL_S = 0.5
"""How often a worker reports (Locust's WORKER_REPORT_INTERVAL, 3 s by default)."""
CONNECT_S = 120.0
"""How long the master waits for its workers to connect."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Settings:
    """What the master was asked to run."""

    plan: dict[str, Any]  # base_url, timeout, facts, workload, label_prefix, engines
    concurrency: int
    duration_s: float | None
    requests: int | None
    workers: int  # how many to wait for (and, with `local`, to start here)
    local: bool
    bind_host: str = "127.0.0.1"
    port: int = 0
    api_key: str | None = None
    cycles: Cycles | None = None


@dataclass
class Outcome:
    tally: Tally
    workers: dict[str, dict[str, Any]]
    marks: list[tuple[float, str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    locust: dict[str, Any] = field(default_factory=dict)


def _quiet() -> None:
    logging.getLogger("locust").setLevel(logging.WARNING)


def run_master(settings: Settings, live: Callable[[Tally, dict[str, Any]], None]) -> Outcome:
    _quiet()
    state = WorkerState("master", None)  # users are dispatched from here, never run here
    env = Environment(user_classes=[bound(state)])
    port = settings.port or free_port()
    runner = env.create_master_runner(settings.bind_host, port)
    merged = Tally()
    workers: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    errors: list[str] = []

    def plan_for(client_id: str) -> dict[str, Any]:
        index = order.index(client_id)
        plan = dict(settings.plan, worker=index)
        if settings.requests is not None:
            share, extra = divmod(settings.requests, max(settings.workers, 1))
            plan["requests"] = share + (index < extra)
        return plan

    def on_hello(environment: Any, msg: Any, **_: Any) -> None:
        """A worker that registered its handlers asks for its plan (a message sent before
        then, on Locust's connect, would find no handler there and be dropped)."""
        client_id = msg.node_id
        if client_id not in order:
            order.append(client_id)
        workers.setdefault(client_id, {"in_flight": 0, "drained": False, "index": len(order) - 1})
        workers[client_id]["name"] = msg.data["value"]
        runner.send_message("tito_plan", plan_for(client_id), client_id)

    def on_report(client_id: str, data: dict[str, Any], **_: Any) -> None:
        delta = data.get("tito")
        if not isinstance(delta, dict):
            return
        merged.add(delta)
        seen = workers.setdefault(client_id, {"index": -1})
        seen.update(in_flight=delta.get("in_flight", 0), drained=delta.get("drained", False))

    runner.register_message("tito_hello", on_hello)
    env.events.worker_report.add_listener(on_report)
    procs = []
    if settings.local:
        child_env = dict(os.environ)
        if settings.api_key:
            child_env["TITO_API_KEY"] = settings.api_key  # not in argv, where ps shows it
        for i in range(settings.workers):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "conformance.load", "--worker"]
                    + ["--master-host", "127.0.0.1", "--master-port", str(port)]
                    + ["--name", f"local-{i}"],
                    env=child_env,
                )
            )
    try:
        waited = time.monotonic() + CONNECT_S
        while len(order) < settings.workers or len(runner.clients.ready) < settings.workers:
            if time.monotonic() > waited or any(p.poll() is not None for p in procs):
                raise RuntimeError(
                    f"{len(order)} of {settings.workers} workers connected "
                    f"to the master on port {port}"
                )
            gevent.sleep(0.1)
        started_at = time.time()
        merged.started_at = started_at
        runner.send_message("tito_go", {"value": started_at})
        cycles = settings.cycles
        cycler = None
        if cycles is not None:
            cycles.started_at = started_at
            cycles.tell = lambda kind, data: runner.send_message(kind, {"value": data})
            cycler = gevent.spawn(cycles.run)
        runner.start(settings.concurrency, spawn_rate=max(settings.concurrency, 1))
        began = time.monotonic()
        while True:
            gevent.sleep(0.5)
            live(merged, workers)
            over = (
                settings.duration_s is not None and time.monotonic() - began >= settings.duration_s
            )
            spent = settings.requests is not None and merged.total("requests") >= settings.requests
            if over or spent or not runner.clients.running and time.monotonic() - began > 30:
                break
        if cycles is not None:
            cycles.stop.set()
        if cycler is not None:
            cycler.join(timeout=30)
        runner.send_message("tito_drain", {"value": True})
        drain_by = time.monotonic() + float(settings.plan.get("timeout", 60)) + 10
        while not all(w.get("drained") for w in workers.values()):
            if time.monotonic() > drain_by:
                stuck = {k: w.get("in_flight") for k, w in workers.items() if not w.get("drained")}
                errors.append(f"workers not drained by the deadline: in flight {stuck}")
                break
            gevent.sleep(0.2)
            live(merged, workers)
        duration = time.monotonic() - began
        stats = env.stats.total
        locust_figures = {
            "requests": stats.num_requests,
            "failures": stats.num_failures,
            "median_ms": stats.median_response_time,
            "p95_ms": stats.get_response_time_percentile(0.95),
        }
    finally:
        runner.quit()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return Outcome(
        merged,
        workers,
        list(cycles.marks) if cycles else [],
        errors + (list(cycles.errors) if cycles else []),
        duration,
        locust_figures,
    )


def run_worker(host: str, port: int, api_key: str | None, name: str) -> int:
    """One worker process: connect, take the plan, run users until the master quits."""
    _quiet()
    locust.runners.WORKER_REPORT_INTERVAL = REPORT_INTERVAL_S
    state = WorkerState(name or socket.gethostname(), api_key)
    env = Environment(user_classes=[bound(state)])
    runner = env.create_worker_runner(host, port)

    def on_plan(environment: Any, msg: Any, **_: Any) -> None:
        state.configure(msg.data)

    def on_go(environment: Any, msg: Any, **_: Any) -> None:
        state.tally.started_at = float(msg.data["value"])
        state.go()

    def report(client_id: str, data: dict[str, Any], **_: Any) -> None:
        state.tally.drained = state.draining and state.active == 0
        data["tito"] = state.tally.take()

    runner.register_message("tito_plan", on_plan)
    runner.register_message("tito_go", on_go)
    runner.register_message(
        "tito_label", lambda environment, msg, **_: state.on_label(msg.data["value"])
    )
    runner.register_message(
        "tito_pause", lambda environment, msg, **_: state.on_pause(msg.data["value"])
    )
    runner.register_message("tito_drain", lambda environment, msg, **_: state.drain())
    env.events.report_to_master.add_listener(report)
    runner.send_message("tito_hello", {"value": state.name})
    runner.greenlet.join()
    return 0
