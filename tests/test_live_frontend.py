"""The frontend backend (issue 29) without vLLM: requirements from a wheel, versions and wheel
files, command lines, the patcher's error, and the fixture's skip where nothing can be built.

The real thing (install, serve, suite) runs in `tox -e live-frontend`."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from live import cli, releases
from live.frontend import install, serve
from live.profiles import DEFAULT_FRONTEND_VERSION, SERVE, Backend, live_profile

pytest_plugins = ["pytester"]

METADATA = """Metadata-Version: 2.1
Name: vllm
Version: 0.35.0
Requires-Dist: regex
Requires-Dist: transformers<5.23.0,>=5.16.1
Requires-Dist: protobuf==7.36.1; platform_machine == "s390x"
Requires-Dist: xgrammar==0.2.8; platform_machine == "x86_64" or platform_machine == "aarch64"
Requires-Dist: torch==2.14.0
Requires-Dist: torchvision==0.29.0
Requires-Dist: flashinfer-python==0.7.3
Requires-Dist: nvidia-cutlass-dsl[cu13]==4.8.0
Requires-Dist: humming-kernels[cu13]==0.1.19
Requires-Dist: numba==0.65.0
Requires-Dist: pandas; extra == "bench"
"""


def _wheel(tmp_path: Path) -> Path:
    path = tmp_path / "vllm-0.35.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("vllm-0.35.0.dist-info/METADATA", METADATA)
    return path


def test_requirements_keep_the_cpu_ones_and_drop_gpu_torch_and_extras(tmp_path: Path) -> None:
    reqs = install.requirements(_wheel(tmp_path))
    names = [r.split("<")[0].split("=")[0].split("[")[0] for r in reqs]
    assert "regex" in names and "transformers" in names and "numba" in names
    assert not {"torch", "torchvision", "flashinfer-python", "pandas"} & set(names)
    assert not any(n.startswith(("nvidia", "humming")) for n in names)
    assert "protobuf" not in names  # its marker is false on x86_64
    assert all(";" not in r for r in reqs)


def test_versions_and_wheel_files() -> None:
    wheel = "/w/vllm-0.35.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    assert releases.version_of(wheel) == "0.35.0"
    assert releases.version_of("0.33.0") == "0.33.0"
    assert releases.parse_versions(f"0.32.0,{wheel}", wheels=True) == ["0.32.0", wheel]
    with pytest.raises(ValueError):
        releases.parse_versions(wheel)  # a wheel file only for the frontend backend


def test_frontend_argv_runs_serve_by_path_with_the_cpu_flags() -> None:
    backend = Backend("frontend", "/m", "/venv/bin/python")
    argv = backend.argv(live_profile("tokens-only"), 8123)
    assert argv[:4] == ["/venv/bin/python", str(SERVE), "--model", "/m"]
    assert "--tokens-only" in argv and "--max-model-len" in argv
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    env = backend.env(live_profile("scale-out"))
    assert env["VLLM_TARGET_DEVICE"] == "cpu" and env["VLLM_SERVER_DEV_MODE"] == "1"
    assert not backend.renice_engine  # no engine process to starve the API server
    with pytest.raises(ValueError):
        backend.argv(live_profile("dp"), 1)


def test_frontend_defaults_to_the_newest_release(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--backend", "frontend", "--print-argv", "--profile", "api-key"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"{DEFAULT_FRONTEND_VERSION} api-key: ")
    assert f"frontend-{DEFAULT_FRONTEND_VERSION}/bin/python" in line and "--api-key" in line


def test_an_interface_that_moved_is_named() -> None:
    with pytest.raises(serve.PatchError, match=r"json\.JSONDecoder\.no_such_method"):
        serve._resolve("json", "JSONDecoder.no_such_method")
    with pytest.raises(serve.PatchError, match=r"no_such_module\.X"):
        serve._resolve("no_such_module", "X")


FIXTURE_TEST = """
import pytest
from live.frontend import run

def _unavailable(self):
    raise run.FrontendUnavailable("vLLM 9.9.9 cannot run here: no wheel")

run.RealFrontend.start = _unavailable

@pytest.mark.tito_vllm_server(version="9.9.9")
def test_a(tito_vllm_server):
    raise AssertionError("not reached")

@pytest.mark.tito_vllm_server(version="9.9.9")
def test_b(tito_vllm_server):
    raise AssertionError("not reached")
"""


def test_fixture_skips_with_the_reason_where_nothing_can_be_built(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(FIXTURE_TEST)
    result = pytester.runpytest("-rs")  # the plugin comes through its pytest11 entry point
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*cannot run here: no wheel*"])
