"""The live launcher's command lines: every profile, every backend, the GPU `live` env line.

The profiles' flags come from `conformance.profiles` (see tests/test_profiles.py)."""

from __future__ import annotations

import sys

import pytest

from conformance.profiles import ALL_PROFILES, DEV_MODE_VAR, MAIN_PROFILES
from live import cli
from live.profiles import LIVE_PROFILES, Backend, live_profile, profiles_for


def test_cpu_argv_uses_the_module_not_the_broken_console_script() -> None:
    argv = Backend("cpu", "/m", python="/venv/bin/python").argv(live_profile("scale-out"), 8123)
    assert argv == [
        "/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m",
        "--host", "127.0.0.1", "--port", "8123",
        "--max-model-len", "4096", "--dtype", "float32", "--max-num-seqs", "16", "--enforce-eager",
        *ALL_PROFILES["scale-out"].flags,
    ]  # fmt: skip


@pytest.mark.parametrize("profile", LIVE_PROFILES)
def test_gpu_argv_is_vllm_serve_model_plus_profile_flags(profile: str) -> None:
    argv = Backend("gpu", "Qwen/Qwen3-0.6B").argv(live_profile(profile), 9000)
    head = ["vllm", "serve", "Qwen/Qwen3-0.6B", "--host", "127.0.0.1", "--port", "9000"]
    assert argv == head + list(ALL_PROFILES[profile].flags)


def test_dp_is_gpu_only_and_unknown_profiles_are_refused() -> None:
    with pytest.raises(ValueError, match="GPU"):
        Backend("cpu", "m").argv(live_profile("dp"), 1)
    with pytest.raises(ValueError, match="unknown profile"):
        live_profile("nope")
    with pytest.raises(ValueError, match="unknown backend"):
        Backend("tpu", "m")
    assert cli.main(["--backend", "cpu", "--profile", "dp", "--print-argv"]) == 2


def test_environment_per_backend() -> None:
    cpu = Backend("cpu", "m").env(live_profile("tokens-only"))
    assert cpu["VLLM_CPU_KVCACHE_SPACE"] == "1" and cpu["HF_HUB_OFFLINE"] == "1"
    gpu = Backend("gpu", "m").env(live_profile("scale-out"))
    assert "VLLM_CPU_KVCACHE_SPACE" not in gpu
    assert gpu[DEV_MODE_VAR] == "1", "scale-out runs in dev mode, as the mock run does"
    assert Backend("cpu", "m").renice_engine and not Backend("gpu", "m").renice_engine


def test_default_profiles() -> None:
    names = [p.name for p in profiles_for("cpu")]
    assert names == ["scale-out", "tokens-only", "disabled", "api-key"] == list(MAIN_PROFILES)
    assert [p.name for p in profiles_for("gpu", ["dp"])] == ["dp"]


def test_gpu_live_env_command_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """tox -e live runs `python -m live --backend gpu`; the model comes from VLLM_MODEL."""
    monkeypatch.delenv("VLLM_MODEL", raising=False)
    assert cli.main(["--backend", "gpu", "--print-argv", "--profile", "scale-out"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("scale-out: vllm serve Qwen/Qwen3-0.6B --host 127.0.0.1 --port ")
    assert line.endswith(" " + " ".join(ALL_PROFILES["scale-out"].flags))
    monkeypatch.setenv("VLLM_MODEL", "org/Other-7B")
    assert cli.main(["--backend", "gpu", "--print-argv", "--profile", "dp"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("dp: vllm serve org/Other-7B ")
    assert line.endswith(" " + " ".join(ALL_PROFILES["dp"].flags))


def test_cpu_print_argv_does_not_build_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--print-argv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == [
        "scale-out", "tokens-only", "disabled", "api-key"
    ]  # fmt: skip
    module = "-m vllm.entrypoints.openai.api_server --model <tiny-model-dir>"
    assert f"{sys.executable} {module}" in out[0]


def _tox_command(env: str) -> list[str]:
    import configparser
    import shlex
    from pathlib import Path

    ini = configparser.ConfigParser(interpolation=None)
    ini.read(Path(__file__).parents[1] / "tox.ini")
    (line,) = [x for x in ini[f"testenv:{env}"]["commands"].splitlines() if x.strip()]
    line = line.replace("{envbindir}", "/env/bin").replace("{toxworkdir}", "/tox")
    line = line.replace("{env:VLLM_MODEL:Qwen/Qwen3-0.6B}", "Qwen/Qwen3-0.6B")
    return shlex.split(line.replace(" {posargs}", ""))


def test_the_tox_live_env_serves_vllm_model_with_vllm_serve(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = _tox_command("live")
    assert argv[:3] == ["python", "-m", "live"]
    assert cli.main([*argv[3:], "--dp", "--print-argv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "scale-out", "tokens-only", "disabled", "api-key", "dp"
    ]  # fmt: skip
    assert all(" /env/bin/vllm serve Qwen/Qwen3-0.6B --host 127.0.0.1 " in f" {x}" for x in lines)


def test_the_tox_live_cpu_env_runs_every_cpu_profile(capsys: pytest.CaptureFixture[str]) -> None:
    argv = _tox_command("live-cpu")
    assert cli.main([*argv[3:], "--print-argv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all("vllm.entrypoints.openai.api_server" in x for x in lines)
