"""`tito-conformance live --vllm-version A,B`: one environment per release, side by side.

Unit: versions parse, each release has its own environment and command line. End to end,
without vLLM: the GPU path with the stand-in installed per release (install_gpu.sh with
`VLLM_VERSION`, the mock playing that release) gives one report per release and profile, the
release matrix, and a gate that holds each report to the version it asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from live import cli, releases
from live.fidelity import release_of
from live.profiles import Backend, LiveProfile, live_profile
from live.side_by_side import run_side_by_side
from live.standin import RELEASE_ENV, is_standin
from live.standin.install import write_executable

ROOT = Path(__file__).parents[1]


def test_versions_parse_in_order_without_repeats() -> None:
    assert releases.parse_versions("0.31.0, 0.30.0,0.31.0") == ["0.31.0", "0.30.0"]
    assert releases.parse_versions("0.32.0rc1,0.33") == ["0.32.0rc1", "0.33"]
    for bad in ("", " , ", "latest", "0.30.0;rm -rf /"):
        with pytest.raises(ValueError, match="--vllm-version"):
            releases.parse_versions(bad)


def test_each_release_has_its_own_environment(tmp_path: Path) -> None:
    a = releases.Release.at(tmp_path, "cpu", "0.30.0")
    b = releases.Release.at(tmp_path, "cpu", "0.31.0")
    assert a.python == str(tmp_path / "cpu-0.30.0" / "bin" / "python")
    assert a.venv != b.venv
    assert releases.Release.at(tmp_path, "gpu", "0.31.0").vllm.endswith("gpu-0.31.0/bin/vllm")
    assert (release_of(a.version), release_of(b.version)) == ("0.30", "0.31"), "the mock plays"


def test_print_argv_names_each_release_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--vllm-version", "0.30.0,0.31.0", "--venvs", str(tmp_path), "--print-argv"]
    assert cli.main([*argv, "--profile", "scale-out", "--profile", "tokens-only"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "0.30.0 scale-out", "0.30.0 tokens-only", "0.31.0 scale-out", "0.31.0 tokens-only",
    ]  # fmt: skip
    assert f"{tmp_path}/cpu-0.30.0/bin/python -m vllm.entrypoints" in lines[0]
    assert "--tokens-only" in lines[3]


@pytest.mark.parametrize(
    "argv",
    [
        ["--backend", "mock", "--vllm-version", "0.31.0"],
        ["--vllm-version", "x.y"],
        ["--vllm-version", "0.31.0", "--releases-at-once", "0"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    assert "--vllm-version" in capsys.readouterr().err


def _run_one(
    backend: Backend, profiles: list[LiveProfile], args: argparse.Namespace, v: str
) -> int:
    """A release's run, as `side_by_side` spawns it: says where it is, ends by its version."""
    print(f"release {v} on {backend.kind}, {profiles[0].name}, out {args.out.name}")
    os.system(f"echo 'a child process of {v}'")  # noqa: S605 - what a server would write
    if v == "broken":
        raise RuntimeError("the run itself broke")
    return 0 if v == "good" else 3


def test_side_by_side_runs_keep_their_codes_and_their_output_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three runs, two at a time, each in a spawned process: every code in, a broken run is
    exit 1 and says so, and each run's output (its child processes' too) is its own log, printed
    whole."""
    backend = Backend("mock", "m")
    jobs = [
        (v, backend, argparse.Namespace(out=tmp_path / f"vllm-{v}"))
        for v in ("good", "bad", "broken")
    ]
    codes, seconds = run_side_by_side(jobs, [live_profile("scale-out")], _run_one, at_once=2)
    assert codes == {"good": 0, "bad": 3, "broken": 1}
    assert set(seconds) == set(codes) and all(t > 0 for t in seconds.values())
    printed = capsys.readouterr().out
    for v in ("good", "bad"):
        log = (tmp_path / f"vllm-{v}" / "live.log").read_text(encoding="utf-8")
        assert log == f"release {v} on mock, scale-out, out vllm-{v}\na child process of {v}\n"
        assert log in printed
    assert "vLLM broken: its process broke: RuntimeError: the run itself broke" in printed


def test_a_standin_executable_plays_its_release(tmp_path: Path) -> None:
    path = write_executable(tmp_path, release="0.31.0")
    assert is_standin(str(path))
    assert f"{RELEASE_ENV}=0.31.0 exec" in path.read_text(encoding="utf-8")
    assert RELEASE_ENV not in write_executable(tmp_path / "plain").read_text(encoding="utf-8")


def test_the_release_environment_is_made_once(tmp_path: Path) -> None:
    """The stand-in install (no vLLM, no network): a venv per release, the stand-in in it."""
    env = {"TITO_VLLM_STANDIN": "1"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        first = releases.ensure("gpu", "0.30.0", tmp_path, tmp_path / "install.log")
        made = Path(first.python).stat().st_mtime_ns
        again = releases.ensure("gpu", "0.30.0", tmp_path, tmp_path / "install.log")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert again == first and Path(again.python).stat().st_mtime_ns == made
    assert is_standin(first.vllm)
    assert f"{RELEASE_ENV}=0.30.0" in Path(first.vllm).read_text(encoding="utf-8")


def test_a_failing_install_is_a_readable_failure(tmp_path: Path) -> None:
    bad = tmp_path / "install.sh"
    bad.write_text("echo 'no such release' >&2; exit 3\n", encoding="utf-8")
    original = releases.INSTALL_SCRIPTS["cpu"]
    releases.INSTALL_SCRIPTS["cpu"] = bad
    try:
        with pytest.raises(releases.ReleaseInstallError, match="exited 3"):
            releases.ensure("cpu", "9.9.9", tmp_path, tmp_path / "install.log")
    finally:
        releases.INSTALL_SCRIPTS["cpu"] = original
    assert "no such release" in (tmp_path / "install.log").read_text(encoding="utf-8")


@pytest.mark.parametrize("at_once", [1, 2], ids=["one-after-another", "side-by-side"])
def test_two_releases_end_to_end_with_the_standin(tmp_path: Path, at_once: int) -> None:
    """`--vllm-version 0.31.0,0.32.0` on the GPU path: reports per release, matrix, and a gate
    per release: with no deviation listed for it, the mock playing 0.31 fails (no
    `weight_versions`, WV-001), while 0.32 passes outright. Side by side
    (`--releases-at-once 2`), the same, with each release's output in its own log, printed
    whole."""
    out = tmp_path / "out"
    listed = tmp_path / "deviations.yaml"
    listed.write_text('versions:\n  "0.31.0": []\n', encoding="utf-8")
    env = {**os.environ, "TITO_VLLM_STANDIN": "1", "TITO_VLLM_VENVS": str(tmp_path / "venvs")}
    argv = [
        sys.executable, "-m", "live", "--backend", "gpu", "--vllm-version", "0.31.0,0.32.0",
        "--profile", "scale-out", "--deviations", str(listed), "--out", str(out),
        "--releases-at-once", str(at_once),
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    for version in ("0.31.0", "0.32.0"):
        report = json.loads((out / f"vllm-{version}" / "report-scale-out.json").read_text())
        assert report["server"]["version"] == version
    assert (out / "matrix.html").stat().st_size > 1000
    matrix = (out / "matrix.md").read_text(encoding="utf-8")
    assert "0.31.0" in matrix and "0.32.0" in matrix
    gate = (out / "gate.txt").read_text(encoding="utf-8")
    assert gate.splitlines() == ["vLLM 0.31.0: FAILED", "vLLM 0.32.0: PASSED"]
    old = (out / "vllm-0.31.0" / "gate.txt").read_text(encoding="utf-8")
    assert "UNLISTED FAILURE WV-001" in old, old
    logs = [out / f"vllm-{version}" / "live.log" for version in ("0.31.0", "0.32.0")]
    if at_once == 1:
        assert not any(log.exists() for log in logs)
        return
    for log in logs:  # each run's own output, whole, in the run's stdout too
        text = log.read_text(encoding="utf-8")
        assert "== live [gpu] overall" in text and text in done.stdout
