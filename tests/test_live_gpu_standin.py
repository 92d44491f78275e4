"""The GPU path without a GPU: the stand-in `vllm` (live/standin) in place of vLLM.

Unit: every flag the GPU path passes maps to the mock's flag with vLLM's meaning, anything else
is refused (exit 2). End to end: `python -m live --backend gpu --vllm <stand-in> --dp --fuzz`,
as `tox -e live-standin` runs it, gives a report per profile and a passing gate.
"""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.profiles import ALL_PROFILES, MAIN_PROFILES, MOCK_KNOBS
from live import cli, deviations
from live.launcher import LiveServer
from live.profiles import LIVE_PROFILES, Backend, live_profile
from live.standin import MARKER, is_standin
from live.standin.flags import SERVE_FLAGS, StandinUsage, to_mock_argv
from live.standin.install import write_executable
from loopback.ports import free_port
from mock_server.behaviour.config import parse_args

ROOT = Path(__file__).parents[1]
MODEL = "Qwen/Qwen3-0.6B"


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in executable, in a bin directory of its own (as install_gpu.sh writes it)."""
    return write_executable(tmp_path_factory.mktemp("bin"))


@pytest.mark.parametrize("name", LIVE_PROFILES)
def test_each_profile_starts_the_mock_vllm_would_be(name: str) -> None:
    """The GPU path's own argv (Backend.argv), mapped, parsed by the mock's own parser."""
    profile = live_profile(name)
    argv = Backend("gpu", MODEL).argv(profile, 9123)
    assert argv[:3] == ["vllm", "serve", MODEL]
    mock_argv = to_mock_argv(argv[1:])
    assert mock_argv[-len(MOCK_KNOBS) :] == list(MOCK_KNOBS), "the embedded run's pace knob"
    config = parse_args(mock_argv, environ=profile.env)
    assert (config.host, config.port, config.served_model_name) == ("127.0.0.1", 9123, (MODEL,))
    assert config.enable_scale_out == ("--enable-scale-out" in profile.flags)
    assert config.tokens_only == ("--tokens-only" in profile.flags)
    assert config.api_keys == ((profile.api_key,) if profile.api_key else ())
    assert config.data_parallel_size == profile.data_parallel
    assert config.dev_mode == profile.dev_mode


def test_every_known_flag_reaches_the_mock_with_its_value() -> None:
    argv = [
        "serve", "m", "--host", "0.0.0.0", "--port=8001", "--no-enable-scale-out",
        "--tokens-only", "--skip-tokenizer-init", "--api-key", "k1", "k2", "--api-key", "k3",
        "--served-model-name", "a", "b", "-dp", "4", "--max_model_len", "1234",
        "--max-num-seqs", "3", "--max-logprobs", "7", "--seed", "9",
        "--return-tokens-as-token-ids", "--enable-return-routed-experts",
        "--return-sampling-mask", "--dtype", "float16", "--enforce-eager",
    ]  # fmt: skip
    c = parse_args(to_mock_argv(argv), environ={})
    assert (c.host, c.port, c.enable_scale_out, c.tokens_only) == ("0.0.0.0", 8001, False, True)
    assert c.skip_tokenizer_init and c.api_keys == ("k1", "k2", "k3")
    assert c.served_model_name == ("a", "b") and c.data_parallel_size == 4
    assert (c.max_model_len, c.max_num_seqs, c.max_logprobs, c.seed) == (1234, 3, 7, 9)
    assert c.return_tokens_as_token_ids and c.enable_return_routed_experts
    assert c.return_sampling_mask
    spelled = {"--no-enable-scale-out": "--enable-scale-out", "-dp": "--data-parallel-size"}
    used = {a.split("=")[0].replace("_", "-") for a in argv if a.startswith("-")}
    assert {spelled.get(a, a) for a in used} == {f.name for f in SERVE_FLAGS}, "every row"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["serve", MODEL, "--gpu-memory-utilization", "0.9"], "--gpu-memory-utilization"),
        (["serve", MODEL, "--enable-scale-ou"], "--enable-scale-ou"),  # no abbreviations
        (["serve", MODEL, "--port", "eighty"], "--port"),
        (["serve"], "model"),
        (["chat", MODEL], "only `vllm serve"),
        ([], "only `vllm serve"),
    ],
)
def test_what_it_does_not_know_is_an_error(argv: list[str], says: str) -> None:
    with pytest.raises(StandinUsage, match=says):
        to_mock_argv(argv)


def test_the_executable_refuses_an_unknown_flag_with_exit_2(vllm: Path) -> None:
    done = subprocess.run(
        [vllm, "serve", MODEL, "--tensor-parallel-size", "2"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--tensor-parallel-size" in done.stderr and "SERVE_FLAGS" in done.stderr


def test_the_executable_is_marked_and_a_real_vllm_is_not(vllm: Path, tmp_path: Path) -> None:
    assert MARKER in vllm.read_text() and os.access(vllm, os.X_OK)
    assert is_standin(str(vllm))
    real = tmp_path / "vllm"
    real.write_text("#!/usr/bin/python3\nfrom vllm.entrypoints.cli.main import main\nmain()\n")
    assert not is_standin(str(real)) and not is_standin(str(tmp_path / "missing"))
    assert Backend("gpu", MODEL, vllm=str(vllm), standin=True).standin


def test_it_is_the_server_process_itself(vllm: Path, tmp_path: Path) -> None:
    """Exec, not a child: the pid the launcher watches and signals is the mock's."""
    profile = live_profile("scale-out")
    port = free_port()
    argv = Backend("gpu", MODEL, vllm=str(vllm)).argv(profile, port)
    server = LiveServer(argv, port, env=profile.env, start_deadline_s=60.0,
                        log_path=tmp_path / "server.log")  # fmt: skip
    with server:
        proc = Path(f"/proc/{server.pid}")
        cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        assert b"mock_server" in cmdline and b"--mock-itl-ms" in cmdline
        assert server.healthy()
    ends = time.monotonic() + 10
    while proc.exists() and time.monotonic() < ends:
        time.sleep(0.1)
    assert not server.alive and not proc.exists(), "stopped with the session"


def _wrapper_python(tmp_path: Path) -> Path:
    """A `python` in a bin of its own that runs this interpreter (as tox's env python would)."""
    bindir = tmp_path / "env" / "bin"
    bindir.mkdir(parents=True)
    python = bindir / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return python


def test_install_gpu_sh_writes_the_standin_instead_of_installing(tmp_path: Path) -> None:
    python = _wrapper_python(tmp_path)
    script = ROOT / "live" / "install_gpu.sh"
    env = {**os.environ, "TITO_VLLM_STANDIN": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["bash", script, python], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert is_standin(str(python.parent / "vllm"))
    env.pop("TITO_VLLM_STANDIN")  # a real install must not leave the stand-in in place
    done = subprocess.run(["bash", script, python], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "is the stand-in" in done.stderr


def test_the_tox_env_is_tox_live_with_the_standin() -> None:
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini")
    env = ini["testenv:live-standin"]
    for key in ("extras", "deps", "pass_env", "commands_pre", "commands", "allowlist_externals"):
        assert env[key].strip() == f"{{[testenv:live]{key}}}", key
    assert "TITO_VLLM_STANDIN = 1" in env["set_env"]
    assert "--out {toxworkdir}/{envname}-results" in ini["testenv:live"]["commands"]


def test_the_gpu_path_end_to_end_with_dp(vllm: Path, tmp_path: Path) -> None:
    """The live run's GPU path, every profile and dp, suite and fuzz, against the stand-in.

    The mock says it is vLLM 0.32.0, whose known deviations are listed; none is demanded of it
    (else tokens-only's ERR-007 would be stale), and no failure is excused.
    """
    assert deviations.for_version(deviations.load(), "0.32.0"), "the list would apply"
    out = tmp_path / "out"
    argv = ["--backend", "gpu", "--vllm", str(vllm), "--model", MODEL, "--dp",
            "--fuzz", "--fuzz-examples", "1", "--out", str(out)]  # fmt: skip
    code = cli.main(argv)
    gate = (out / "gate.txt").read_text()
    assert code == 0, gate
    profiles = [*MAIN_PROFILES, "dp"]
    assert gate.startswith("vllm stand-in: the mock behind `vllm serve`")
    assert "STALE" not in gate and "UNLISTED" not in gate and "listed deviation" not in gate
    for name in profiles:
        assert f"[{name}] vLLM 0.32.0: ok" in gate
        report = json.loads((out / f"report-{name}.json").read_text())
        assert report["summary"]["failed"] == report["summary"]["errors"] == 0
        assert set(report["server"]["claimed_features"]) == set(ALL_PROFILES[name].claims)
        log = (out / f"server-{name}.log").read_text().splitlines()
        assert log[0].startswith(f"--- start: {vllm} serve {MODEL} --host 127.0.0.1 --port ")
        assert log[0].endswith(" ".join(ALL_PROFILES[name].flags))
        assert " -m mock_server " in log[1]
        assert (out / f"fuzz-{name}.json").exists()
    assert "--data-parallel-size 2" in (out / "server-dp.log").read_text()
    dp = json.loads((out / "report-dp.json").read_text())["server"]
    assert "data-parallel" in dp["detected_features"], "the probe saw 2 ranks"
    assert set(json.loads((out / "timings.json").read_text())) == {*profiles, "total_s"}


def test_the_gpu_path_loads_each_profile_after_its_suite(vllm: Path, tmp_path: Path) -> None:
    """`--load 3` through the stand-in (`tox -e live-standin`'s path): a load phase per profile
    that serves generate (dp's ranks pinned by the load's users), its reports beside the suite's,
    its gate in gate.txt; a correct server violates nothing, `disabled` has nothing to load."""
    out = tmp_path / "out"
    argv = ["--backend", "gpu", "--vllm", str(vllm), "--model", MODEL, "--profile", "scale-out",
            "--profile", "disabled", "--dp", "--load", "3", "--out", str(out)]  # fmt: skip
    code = cli.main(argv)
    gate = (out / "gate.txt").read_text()
    assert code == 0, gate
    loaded = gate.split("load gate:\n", 1)[1]
    assert "[disabled] vLLM 0.32.0: skipped" in loaded and "UNLISTED" not in loaded
    for name in ("scale-out", "dp"):
        assert f"[{name}] vLLM 0.32.0: ok" in loaded
        data = json.loads((out / f"load-{name}.json").read_text())
        assert data["verdict"] == "PASSED" and data["figures"]["requests"] > 10
        assert (out / f"load-{name}.html").exists() and (out / f"load-{name}.xml").exists()
    dp = json.loads((out / "load-dp.json").read_text())
    assert any(r["id"] == "DP-001" and r["judged"] for r in dp["requirements"]), "ranks pinned"
    assert not (out / "load-disabled.json").exists()
    assert json.loads((out / "timings.json").read_text())["dp"]["load_s"] >= 3
