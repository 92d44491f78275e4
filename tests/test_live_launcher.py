"""The live launcher, exercised with `python -m mock_server` in place of vLLM (same flags).

Also its base, `conformance.server.process.ServerProcess`, with small stand-in servers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conformance.server.process import ServerProcess
from live import procgroup
from live.launcher import LiveServer, ServerStartError
from live.profiles import Backend, live_profile
from loopback import processes
from loopback.ports import free_port


def mock_server(profile: str, tmp_path: Path, *extra: str) -> LiveServer:
    port = free_port()
    backend = Backend("mock", "tiny-qwen3", sys.executable, extra_args=extra)
    lp = live_profile(profile)
    return LiveServer(
        backend.argv(lp, port),
        port,
        env=backend.env(lp),
        start_deadline_s=30.0,
        api_key=lp.api_key,
        log_path=tmp_path / "server.log",
    )


def python_server(code: str, tmp_path: Path, deadline: float = 30.0) -> LiveServer:
    """A stand-in that never gets healthy, for the failure paths."""
    return LiveServer(
        [sys.executable, "-c", code],
        free_port(),
        start_deadline_s=deadline,
        warmup=False,
        log_path=tmp_path / "server.log",
    )


@pytest.fixture
def started(tmp_path: Path) -> Iterator[LiveServer]:
    server = mock_server("scale-out", tmp_path)
    with server:
        yield server
    assert not server.alive


def test_start_waits_for_health_warms_up_and_stop_leaves_nothing(tmp_path: Path) -> None:
    server = mock_server("api-key", tmp_path)
    with server:
        sid = server.pid
        assert server.healthy()
        assert len(server.timings.starts_s) == 1 and len(server.timings.warmup_s) == 1
        answer = httpx.post(
            server.base_url + "/inference/v1/generate",
            json={"token_ids": [1, 2], "sampling_params": {"max_tokens": 1}},
            headers={"Authorization": f"Bearer {server.api_key}"},
        )
        assert answer.status_code == 200
    assert processes.session_members(sid) == []
    assert "--- start:" in (tmp_path / "server.log").read_text()


def test_deadline_stops_a_server_that_never_gets_healthy(tmp_path: Path) -> None:
    code = "import time; print('booting', flush=True); time.sleep(60)"
    server = python_server(code, tmp_path, 1.0)
    t0 = time.monotonic()
    with pytest.raises(ServerStartError, match="not healthy within 1 s") as info:
        server.start()
    assert time.monotonic() - t0 < 15
    assert "booting" in str(info.value), "the log tail is shown"
    assert not server.alive


def test_early_exit_is_reported_with_the_log_tail(tmp_path: Path) -> None:
    server = python_server("import sys; print('no such model', flush=True); sys.exit(3)", tmp_path)
    with pytest.raises(ServerStartError, match="exited with 3") as info:
        server.start()
    assert "no such model" in str(info.value)


def test_children_that_outlive_the_leader_are_stopped(tmp_path: Path) -> None:
    """vLLM's EngineCore/Worker may outlive a crashed API process: stop finds them by session."""
    code = (
        "import subprocess, sys, time;"
        "subprocess.Popen([sys.executable, '-c', 'import signal, time;"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)']);"
        "time.sleep(120)"
    )
    leader = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    sid = leader.pid
    ends = time.monotonic() + 10
    while len(processes.session_members(sid)) < 2 and time.monotonic() < ends:
        time.sleep(0.05)
    assert len(processes.session_members(sid)) == 2
    os.kill(sid, 9)  # the leader dies, the child (which ignores SIGTERM) stays
    leader.wait()
    assert len(processes.session_members(sid)) == 1
    t0 = time.monotonic()
    survivors = processes.stop_session(sid, grace_s=0.5)
    assert survivors == [] and processes.session_members(sid) == []
    assert time.monotonic() - t0 < 10


def test_restart_after_death_on_the_same_port(tmp_path: Path) -> None:
    server = mock_server("tokens-only", tmp_path, "--mock-defect", "oov-token-500")
    with server:
        port = server.port
        bad = {"token_ids": [10, 1_000_000_000], "sampling_params": {"max_tokens": 2}}
        answer = httpx.post(server.base_url + "/inference/v1/generate", json=bad, timeout=10)
        assert answer.status_code == 500
        ends = time.monotonic() + 10
        while server.alive and time.monotonic() < ends:
            time.sleep(0.05)
        assert not server.alive, "the oov-token-500 defect takes the mock down, as in vLLM 0.32"
        server.restart()
        assert server.alive and server.port == port and server.healthy()
        assert server.restarts == 1 and len(server.timings.starts_s) == 2
    assert server.log_tail().count("--- start:") == 2, "the log is kept across restarts"


def test_renice_sets_every_thread_of_matching_processes(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                             start_new_session=True)  # fmt: skip
    try:
        time.sleep(0.2)
        assert procgroup.renice(proc.pid, names=("sleep",)) >= 1
        assert os.getpriority(os.PRIO_PROCESS, proc.pid) == 19
        assert procgroup.renice(other.pid) == 0, "only VLLM::EngineCore / VLLM::Worker by default"
        assert os.getpriority(os.PRIO_PROCESS, other.pid) != 19
    finally:
        for p in (proc, other):
            processes.stop_session(p.pid, grace_s=1)
            p.wait()


def test_process_name_reads_the_title(started: LiveServer) -> None:
    assert "python" in procgroup.process_name(started.pid)
    assert processes.session_members(started.pid) == [started.pid]


STAND_IN = """
import http.server, subprocess, sys
port, status, child = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "child"
if child:  # a worker that ignores SIGTERM, as a stand-in for vLLM's EngineCore
    subprocess.Popen([sys.executable, "-c", "import signal, time;"
                      "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"])
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(status); self.end_headers()
    def log_message(self, *args):
        pass
print("serving", flush=True)
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


def stand_in(status: int = 200, child: bool = False) -> tuple[list[str], int]:
    port = free_port()
    return [sys.executable, "-c", STAND_IN, str(port), str(status), str(child and "child")], port


def test_server_process_stops_workers_that_outlive_the_leader_and_drops_its_temp_log() -> None:
    argv, port = stand_in(child=True)
    server = ServerProcess(argv, port, stop_grace_s=0.5).start()
    sid, log = server.pid, server.log_path
    assert log is not None and "serving" in server.log_tail()
    ends = time.monotonic() + 10
    while len(processes.session_members(sid)) < 2 and time.monotonic() < ends:
        time.sleep(0.05)
    os.kill(sid, 9)  # the leader dies, its worker stays
    ends = time.monotonic() + 10
    while server.alive and time.monotonic() < ends:
        time.sleep(0.05)
    assert len(processes.session_members(sid)) == 1
    assert server.stop() == [] and processes.session_members(sid) == []
    assert not log.exists() and server.log_path is None, "a temporary log goes with the server"


def test_without_proc_the_process_group_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = "import subprocess, sys, time; subprocess.Popen(['sleep', '60']); time.sleep(60)"
    leader = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    sid = leader.pid
    ends = time.monotonic() + 10
    while len(processes.session_members(sid)) < 2 and time.monotonic() < ends:
        time.sleep(0.05)
    with monkeypatch.context() as m:
        m.setattr(processes, "PROC", tmp_path / "no-proc")
        assert processes.session_members(sid) == [sid]
        assert processes.stop_session(sid, grace_s=2.0, leader=leader) == []
    assert leader.returncode is not None
    ends = time.monotonic() + 5
    while (
        processes.session_members(sid) and time.monotonic() < ends
    ):  # the orphan is reaped by init
        time.sleep(0.05)
    assert processes.session_members(sid) == []


def test_a_guarded_health_is_up_for_the_suite_but_not_for_a_live_server(tmp_path: Path) -> None:
    """The suite reports a 401 on /health as a finding; a live run needs a server that answers."""
    argv, port = stand_in(status=401)
    with ServerProcess(argv, port) as server:
        assert server.healthy()
    live = LiveServer(argv, port, start_deadline_s=1.0, warmup=False, log_path=tmp_path / "l.log")
    with pytest.raises(ServerStartError, match="not healthy within 1 s"):
        live.start()
    assert not live.alive
