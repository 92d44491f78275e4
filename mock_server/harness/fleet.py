"""A deployment on a laptop: N `tito-mock` engines behind one router, for rollout code's tests.

TITO runs at scale behind a router, and rollout code meets bugs there that one server never
shows (an abort that reaches the wrong engine, an engine that dies mid-stream). Each engine is
a `tito-mock` process of its own on a free loopback port, so `kill(i)` ends it the way a
crashed engine ends: its streams break off. The router is the real vllm-router when its binary
is there (`TITO_VLLM_ROUTER`, else `vllm-router` on PATH), else the kit's own router, a test
instrument that can also break one duty on purpose (`router_defect`).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Unpack

import httpx

from loopback import vllm_router
from loopback.ports import free_port
from loopback.processes import signal_session, start_session, stop_session
from loopback.readiness import ExitedBeforeReady, NotReady, wait_ready
from loopback.timeouts import LOCAL_READ_S, MOCK_START_S, REAP_S
from mock_server.endpoints.mock_stats import read_stats
from mock_server.harness.tito_mock import MockOptions, MockSettings

ROUTERS = ("auto", "kit", "vllm-router")
START_TIMEOUT = MOCK_START_S  # engines and router alike: mock-sized starts on loopback


class FleetError(RuntimeError):
    """An engine or the router did not start; the message carries the tail of its log."""


class RouterNotFound(FleetError):
    """`router="vllm-router"` was asked for and no binary is there."""


@dataclass
class _Process:
    """A server of its own session (so a stop takes every process it made), logging to a file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: IO[bytes]

    def tail(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-2000:]

    def stop(self) -> None:
        stop_session(self.popen.pid, leader=self.popen)
        self.log.close()


def _spawn(name: str, argv: list[str], env: Mapping[str, str] | None = None) -> _Process:
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _Process.stop
    return _Process(name, start_session(argv, log, env), log)


def _wait_healthy(process: _Process, url: str, deadline: float) -> None:
    """Until `url/health` answers 200; a process that exits or a deadline passed is an error."""
    try:
        wait_ready(process.popen, url, within=deadline - time.monotonic())
    except ExitedBeforeReady:
        raise FleetError(f"{process.name} exited at start-up:\n{process.tail()}") from None
    except NotReady:
        raise FleetError(
            f"{process.name} did not answer {url}/health in time:\n{process.tail()}"
        ) from None


@dataclass
class Fleet:
    """A running fleet: `url` (the router), `engines` (their base URLs), `router` ("kit" or
    "vllm-router"); a context manager, and `close()` always stops everything."""

    url: str = ""
    engines: list[str] = field(default_factory=list)
    router: str = "kit"
    _processes: list[_Process] = field(default_factory=list, repr=False)
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()

    def kill(self, i: int) -> None:
        """Kill engine `i` at once (SIGKILL): its streams break off mid-answer, as when an
        engine dies; the router then finds it unreachable."""
        engine = self._processes[i]
        signal_session(engine.popen.pid, signal.SIGKILL)
        engine.popen.wait(REAP_S)

    def stats(self) -> list[dict[str, Any]]:
        """Each engine's `/mock/stats`, read at its own URL (an engine that is gone: {})."""
        out: list[dict[str, Any]] = []
        with httpx.Client(timeout=LOCAL_READ_S) as client:
            for url in self.engines:
                try:
                    out.append(read_stats(client, url))
                except httpx.HTTPError:
                    out.append({})
        return out


def start_fleet(
    engines: int = 2,
    flags: Iterable[str] = (),
    *,
    router: str = "auto",
    router_defect: str | None = None,
    engine_api_key: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    **mock: Unpack[MockOptions],
) -> Fleet:
    """Start `engines` mocks (`tito-mock --enable-scale-out` plus `flags` and `mock`'s defects,
    latency, environment and release, as the `tito_mock` fixture makes them) and a router on
    `host:port` (0: a free port); use as a context manager.

    `router`: "auto" (vllm-router when found, else the kit's), "vllm-router" (RouterNotFound
    without it) or "kit"; a `router_defect` needs the kit's router. `engine_api_key` is the
    key the kit's router sends for `key-bypassed` (default: the engines' first `--api-key`).
    """
    from mock_server.router.policy import ROUTER_DEFECTS

    if engines < 1:
        raise ValueError("a fleet needs at least one engine")
    if router not in ROUTERS:
        raise ValueError(f"router must be one of {ROUTERS}, not {router!r}")
    if router_defect is not None and router_defect not in ROUTER_DEFECTS:
        raise ValueError(f"unknown router defect {router_defect!r}: {', '.join(ROUTER_DEFECTS)}")
    if router_defect is not None and router == "vllm-router":
        raise ValueError("a router defect is a fault of the kit's router: use router='kit'")
    settings = MockSettings.of(flags, **mock)
    config = settings.config()  # a bad flag fails here, not in N processes
    binary = None if router == "kit" or router_defect else vllm_router.find_binary()
    if router == "vllm-router" and binary is None:
        raise RouterNotFound(vllm_router.HOW_TO_GET)
    fleet = Fleet(router="vllm-router" if binary else "kit")
    try:
        _start_engines(fleet, engines, settings, host)
        if binary:
            fleet.url = _start_vllm_router(fleet, binary, host, port)
        else:
            from mock_server.router.proxy import create_router_app
            from mock_server.router.server import serving

            key = engine_api_key or (config.api_keys[0] if config.api_keys else None)
            app = create_router_app(fleet.engines, defect=router_defect, engine_api_key=key)
            fleet.url = fleet._stack.enter_context(serving(app, host, port))
    except BaseException:
        fleet.close()
        raise
    return fleet


def _start_engines(fleet: Fleet, count: int, settings: MockSettings, host: str) -> None:
    """Every engine starts at once; one whose port was taken meanwhile is started again."""
    argv = [sys.executable, "-m", "mock_server", *settings.argv()]
    env = dict(settings.env)
    pending = list(range(count))
    slots: list[tuple[_Process, str] | None] = [None] * count
    for _attempt in range(3):
        for i in pending:
            port = free_port()
            process = _spawn(f"engine {i}", [*argv, "--host", host, "--port", str(port)], env)
            fleet._stack.callback(process.stop)
            slots[i] = (process, f"http://{host}:{port}")
        deadline = time.monotonic() + START_TIMEOUT
        failed: list[int] = []
        for i in pending:
            slot = slots[i]
            assert slot is not None
            try:
                _wait_healthy(slot[0], slot[1], deadline)
            except FleetError as exc:
                if "address already in use" not in str(exc).lower():
                    raise
                failed.append(i)
        pending = failed
        if not pending:
            break
    if pending:
        raise FleetError(f"engines {pending} found no free port")
    fleet._processes = [slot[0] for slot in slots if slot is not None]
    fleet.engines = [slot[1] for slot in slots if slot is not None]


def _start_vllm_router(fleet: Fleet, binary: str, host: str, port: int) -> str:
    port = port or free_port()
    argv = vllm_router.command_line(binary, fleet.engines, port, host=host)
    process = _spawn(vllm_router.PACKAGE, argv)
    fleet._stack.callback(process.stop)
    url = f"http://{host}:{port}"
    _wait_healthy(process, url, time.monotonic() + START_TIMEOUT)
    return url
