"""`loopback`: the one owner of port, process, readiness, keep-alive and the vllm-router lookup.

Each helper is exercised on real processes and sockets: a free port binds, readiness gives up
as soon as its process exits, a stop kills what ignores SIGTERM, and both of the kit's proxies
drop the same hop-by-hop headers.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.fault_proxy import proxied, serve
from loopback import connections, vllm_router
from loopback.ports import free_port, is_free
from loopback.processes import session_members, start_session, stop_session
from loopback.readiness import ExitedBeforeReady, NotReady, answers, wait_ready
from mock_server.router.proxy import create_router_app
from mock_server.router.server import serving

HEALTH_SERVER = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


@pytest.fixture
def python_session() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts with `start_session`; every one is stopped after it."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        stop_session(proc.pid, grace_s=0.5, leader=proc)


# ---------------------------------------------------------------------------------- ports


def test_a_free_port_binds_and_a_bound_one_is_not_free() -> None:
    port = free_port()
    assert is_free(port)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        assert not is_free(port)
    assert is_free(port)


# ------------------------------------------------------------------------------ readiness


def test_readiness_fails_at_once_when_the_process_exits(
    python_session: list[subprocess.Popen[bytes]],
) -> None:
    code = "import time, sys; time.sleep(0.3); sys.exit(3)"
    proc = start_session([sys.executable, "-c", code], subprocess.DEVNULL)
    python_session.append(proc)
    t0 = time.monotonic()
    with pytest.raises(ExitedBeforeReady) as caught:
        wait_ready(proc, f"http://127.0.0.1:{free_port()}", within=60)
    assert caught.value.returncode == 3
    assert time.monotonic() - t0 < 10, "it waited for the deadline, not for the exit"


def test_readiness_gives_up_at_its_deadline(
    python_session: list[subprocess.Popen[bytes]],
) -> None:
    proc = start_session([sys.executable, "-c", "import time; time.sleep(60)"], subprocess.DEVNULL)
    python_session.append(proc)
    t0 = time.monotonic()
    with pytest.raises(NotReady) as caught:
        wait_ready(proc, f"http://127.0.0.1:{free_port()}", within=0.5)
    assert not isinstance(caught.value, ExitedBeforeReady)
    assert 0.5 <= time.monotonic() - t0 < 5
    assert proc.poll() is None


def test_readiness_is_a_200_on_health(python_session: list[subprocess.Popen[bytes]]) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-c", HEALTH_SERVER, str(port)]
    proc = start_session(argv, subprocess.DEVNULL)
    python_session.append(proc)
    took = wait_ready(proc, url, within=30)
    assert 0 <= took < 30
    assert answers(url)
    assert not answers(url, path="/other"), "a 404 is not ready"
    assert not answers(f"http://127.0.0.1:{free_port()}", timeout=0.5), "nothing listens"


# ------------------------------------------------------------------------------ processes

STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('c', flush=True);"
    " time.sleep(60)"], stdout=subprocess.PIPE)
child.stdout.readline()
print("ready", flush=True)
time.sleep(60)
"""


def test_a_stop_kills_a_session_that_ignores_sigterm() -> None:
    proc = start_session([sys.executable, "-c", STUBBORN], subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    sid = proc.pid
    assert len(session_members(sid)) == 2, "the leader and its child"
    t0 = time.monotonic()
    survivors = stop_session(sid, grace_s=0.3, leader=proc)
    assert survivors == []
    assert proc.returncode == -signal.SIGKILL, "SIGTERM was ignored: only SIGKILL ends it"
    assert session_members(sid) == []
    assert time.monotonic() - t0 < 5


def test_a_stop_of_a_polite_process_needs_no_sigkill() -> None:
    proc = start_session([sys.executable, "-c", "import time; time.sleep(60)"], subprocess.DEVNULL)
    ends = time.monotonic() + 10
    while not session_members(proc.pid) and time.monotonic() < ends:
        time.sleep(0.05)
    assert stop_session(proc.pid, leader=proc) == []
    assert proc.returncode == -signal.SIGTERM


# ---------------------------------------------------------------------------- connections


def _echo_app() -> Any:
    """An upstream answering, as JSON, the header names it received, and a hop-by-hop header
    of its own beside an end-to-end one."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        body = json.dumps(sorted(k.decode().lower() for k, _ in scope["headers"])).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"x-end-to-end", b"1"),
            (b"proxy-connection", b"keep-alive"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


@pytest.fixture(scope="module")
def proxies() -> Iterator[dict[str, str]]:
    """The kit's router and the fault proxy, both in front of one echoing upstream."""
    with (
        serve(_echo_app()) as upstream,
        serving(create_router_app([upstream])) as router,
        proxied(upstream) as (fault_proxy, _),
    ):
        yield {"router": router, "fault proxy": fault_proxy}


@pytest.mark.parametrize("proxy", ["router", "fault proxy"])
def test_both_proxies_drop_the_one_hop_by_hop_set(proxies: dict[str, str], proxy: str) -> None:
    sent = {"x-end-to-end": "1", "te": "trailers", "proxy-connection": "keep-alive"}
    reply = httpx.post(proxies[proxy] + "/echo", content=b"{}", headers=sent)
    assert reply.status_code == 200
    received = set(reply.json())
    assert "x-end-to-end" in received
    assert received.isdisjoint({"te", "proxy-connection"}), received
    assert reply.headers.get("x-end-to-end") == "1"
    assert "proxy-connection" not in reply.headers


def test_hop_by_hop_names_are_lower_case_bytes_and_keep_alive_is_under_uvicorns() -> None:
    assert all(name == name.lower() for name in connections.HOP_BY_HOP)
    assert {b"connection", b"keep-alive", b"transfer-encoding"} <= connections.HOP_BY_HOP
    headers = [(b"Connection", b"close"), (b"X-Kept", b"1"), (b"Host", b"h")]
    assert connections.end_to_end(headers) == [(b"X-Kept", b"1")]
    assert 0 < connections.KEEPALIVE_S <= 5 / 2  # uvicorn closes idle connections at 5 s


# ---------------------------------------------------------------------------- vllm-router


def test_the_router_binary_is_the_environments_when_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = tmp_path / "vllm-router"
    binary.write_text("#!/bin/sh\n")
    monkeypatch.setenv(vllm_router.BINARY_ENV, str(binary))
    assert vllm_router.find_binary() is None, "not executable"
    os.chmod(binary, 0o755)
    assert vllm_router.find_binary() == str(binary)
    monkeypatch.setenv(vllm_router.BINARY_ENV, str(tmp_path / "missing"))
    assert vllm_router.find_binary() is None
    assert f"{vllm_router.PACKAGE}=={vllm_router.DEFAULT_VERSION}" in vllm_router.HOW_TO_GET


def test_the_router_command_line_has_a_metrics_port_of_its_own() -> None:
    argv = vllm_router.command_line("vr", ["http://a", "http://b"], 8000, host="0.0.0.0")
    assert argv[:5] == ["vr", "--host", "0.0.0.0", "--port", "8000"]
    assert argv[argv.index("--worker-urls") + 1 : argv.index("--worker-urls") + 3] == [
        "http://a",
        "http://b",
    ]
    metrics = int(argv[argv.index("--prometheus-port") + 1])
    assert metrics != 29000 and metrics > 0
    assert "--api-key" not in argv
    keyed = vllm_router.command_line("vr", ["http://a"], 1, api_key="k", extra=["--x"])
    assert keyed[-3:] == ["--api-key", "k", "--x"]


# ------------------------------------------------------------------ a server in this process


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


def _config(port: int) -> Any:
    import uvicorn

    return uvicorn.Config(_hello, host="127.0.0.1", port=port, log_level="critical", lifespan="off")


def test_in_thread_serves_then_closes_its_socket() -> None:
    from loopback.in_process import in_thread

    with in_thread(_config(0), "hello") as url:
        assert httpx.get(url, timeout=5).text == "hello"
        port = int(url.rsplit(":", 1)[1])
    assert is_free(port)


# uvicorn ends its thread with SystemExit when it cannot bind: that is the case under test
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_in_thread_that_cannot_bind_says_so_at_once() -> None:
    from loopback.in_process import in_thread

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="did not start"), in_thread(_config(port), "x"):
            pass
        assert time.monotonic() - start < 5  # the thread ended: no wait for the deadline
