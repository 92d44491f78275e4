"""The real router (vllm-router, `live.router`) in front of two `tito-mock` engines.

Installs the router on first use (about 20 s, into the user cache, then reused); the test is
skipped only when that install fails, with the reason. Each engine answers its own
`/mock/stats`, which shows the round-robin router sent one generate to each.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from conformance.server.process import ServerProcess, mock_argv
from live.router import (
    RouterInstallError,
    RouterProcess,
    ServerStartError,
    router_env,
    start_router,
)
from loopback.ports import free_port

GENERATE = "/inference/v1/generate"
BODY = {"token_ids": [151644, 872, 198], "sampling_params": {"max_tokens": 4, "ignore_eos": True}}


@pytest.fixture(scope="module")
def binary() -> Path:
    try:
        return router_env(os.environ.get("TITO_ROUTER_VERSION"))
    except RouterInstallError as exc:
        pytest.skip(f"vllm-router could not be installed: {str(exc).splitlines()[0]}")


@pytest.fixture
def engines() -> Iterator[list[ServerProcess]]:
    with ExitStack() as stack:
        servers = []
        for _ in range(2):
            port = free_port()
            server = ServerProcess(mock_argv(port, ["--enable-scale-out"]), port)
            servers.append(stack.enter_context(server))
        yield servers


def received(engine: ServerProcess) -> int:
    return int(httpx.get(engine.base_url + "/mock/stats", timeout=5).json()["received"])


def test_generate_through_the_router_reaches_each_engine_in_turn(
    binary: Path, engines: list[ServerProcess]
) -> None:
    with start_router(binary, [e.base_url for e in engines]) as router:
        assert isinstance(router, RouterProcess) and router.alive
        answers = [httpx.post(router.url + GENERATE, json=BODY, timeout=30) for _ in engines]
        for answer in answers:
            assert answer.status_code == 200, answer.text
            choice = answer.json()["choices"][0]
            assert len(choice["token_ids"]) == 4 and choice["finish_reason"] == "length"
        assert [received(e) for e in engines] == [1, 1]
    assert not router.alive


def test_a_router_that_cannot_start_says_why_with_its_log(binary: Path) -> None:
    with pytest.raises(ServerStartError) as caught:
        start_router(binary, ["http://127.0.0.1:1"], extra=["--no-such-flag"])
    assert "log tail" in str(caught.value) and "--no-such-flag" in str(caught.value)


def test_a_deployment_over_mocks_names_the_router(binary: Path, tmp_path: Path) -> None:
    """`live --router` over two correct mocks: the misrouted abort is reported, every failure
    is attributed to the router, and the gate holds exactly the router's listed deviations;
    the load phase (`--load`) through the router, engines named, violates no other."""
    from live.cli import main
    from loopback.vllm_router import DEFAULT_VERSION

    version = os.environ.get("TITO_ROUTER_VERSION") or DEFAULT_VERSION
    argv = ["--backend", "mock", "--router", f"vllm-router=={version}", "--engines", "2"]
    code = main([*argv, "--profile", "scale-out", "--load", "3", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "report-scale-out.json").read_text())
    report = data["profiles"]["scale-out"] if "profiles" in data else data
    failed = {r["id"]: r["attribution"] for r in report["requirements"] if r["status"] == "fail"}
    assert failed.get("ROUTER-001") == "router" and failed.get("ABORT-002") == "router", failed
    assert set(failed.values()) == {"router"}, failed
    assert report["server"]["router"] == f"vllm-router {version}"
    assert len(report["server"]["engines"]) == 2
    gate = (tmp_path / "gate.txt").read_text()
    assert code == 0, gate
    assert f"load gate:\n  [scale-out] vLLM {report['server']['version']}: ok" in gate, gate
    load = json.loads((tmp_path / "load-scale-out.json").read_text())
    assert load["server"]["engines"] == report["server"]["engines"] and load["figures"]["requests"]
