"""A release's CUDA wheel on CPU: `vllm==V --no-deps` over CPU torch and its other requirements.

The environment is `frontend-<version>` under the release environments' root (next to
`cpu-<version>`). Its requirements are the wheel's own `Requires-Dist` (base, no extras),
minus what exists only for GPUs (`GPU_ONLY`) and minus torch, which is pinned to the CPU build
the machine has (`TITO_FRONTEND_TORCH`, default 2.13.0: uv is given `$PIP_FIND_LINKS`).
The wheel comes from the cache `live/drift` fills (`wheels/vllm-<version>/`), else from
`pip download`, or is the file named. A finished environment carries `tito-frontend.json`
(version, wheel, seconds, size) and costs a second next time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

from live.releases import (
    Release,
    ReleaseInstallError,
    default_root,
    make_venv,
    run_step,
    version_of,
)

HERE = Path(__file__).parent
MARKER = "tito-frontend.json"
TORCH = os.environ.get("TITO_FRONTEND_TORCH", "2.13.0")
GPU_ONLY = re.compile(
    r"^(torch|torchaudio|torchvision|torchcodec|pynvvideocodec|flashinfer(-.*)?|apache-tvm-ffi"
    r"|tilelang|nvidia-.*|nvtx|fastsafetensors|instanttensor|quack-kernels|tokenspeed-mla"
    r"|humming-kernels|xformers|cupy(-.*)?|deep-gemm|deep-ep|cuda-.*|pplx-kernels|b12x)$"
)
"""CUDA-only packages and torch itself (torch comes in as the CPU build)."""


@dataclass(frozen=True)
class FrontendRelease(Release):
    """A release environment, and the wheel its vLLM came from."""

    wheel: Path | None = None


def wheel_for(spec: str, root: Path) -> Path:
    """The wheel file named, the cached one, or a fresh `pip download` of `vllm==spec`."""
    if spec.endswith(".whl"):
        path = Path(spec).resolve()
        if not path.is_file():
            raise ReleaseInstallError(f"no wheel file {spec}")
        return path
    from live.drift.fetch import FetchError, download

    folder = root.parent / "wheels" / f"vllm-{spec}"
    cached = sorted(folder.glob("vllm-*.whl")) if folder.is_dir() else []
    if cached:
        return cached[-1]
    try:
        return download("vllm", spec, folder)
    except FetchError as exc:
        raise ReleaseInstallError(str(exc)) from exc


def requirements(wheel: Path) -> list[str]:
    """The wheel's base requirements for this machine, without the GPU-only ones and torch."""
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        lines = zf.read(name).decode("utf-8").splitlines()
    kept = []
    for line in lines:
        if not line.startswith("Requires-Dist:"):
            continue
        req = Requirement(line.split(":", 1)[1].strip())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if GPU_ONLY.match(re.sub(r"[-_.]+", "-", req.name).lower()):
            continue
        req.marker = None
        kept.append(str(req))
    return kept


def ensure(spec: str, root: Path | None, log: Path) -> FrontendRelease:
    """The release's frontend environment under `root`, installed unless it already is."""
    root = root or default_root()
    version = version_of(spec)
    venv = root / f"frontend-{version}"
    marker = venv / MARKER
    log.parent.mkdir(parents=True, exist_ok=True)
    if marker.is_file():
        data = json.loads(marker.read_text(encoding="utf-8"))
        print(f"vllm {version} (frontend): {venv} (installed, {data['install_s']} s)", flush=True)
        return FrontendRelease(version, venv, Path(data["wheel"]))
    t0 = time.monotonic()
    with log.open("a", encoding="utf-8") as sink:
        wheel = wheel_for(spec, root)
        python = venv / "bin" / "python"
        if not python.exists():
            run_step(make_venv(venv), sink, os.environ)
        uv = _uv(str(python), sink)
        links = [
            a for d in os.environ.get("PIP_FIND_LINKS", "").split() for a in ("--find-links", d)
        ]
        reqs = venv / "tito-requirements.txt"
        reqs.write_text("\n".join(requirements(wheel)) + "\n", encoding="utf-8")
        constraint = venv / "tito-constraints.txt"
        constraint.write_text(f"torch=={TORCH}\n", encoding="utf-8")
        install = [*uv, "pip", "install", "-q", "--python", str(python), *links]
        run_step(
            [*install, "-c", str(constraint), f"torch=={TORCH}", "-r", str(reqs)], sink, os.environ
        )
        run_step([*install, "--no-deps", str(wheel)], sink, os.environ)
        check = [str(python), str(HERE / "serve.py"), "--check"]
        run_step(check, sink, {**os.environ, "VLLM_NO_USAGE_STATS": "1"})
    seconds = round(time.monotonic() - t0, 1)
    size = _size_mb(venv)
    data = {"version": version, "wheel": str(wheel), "install_s": seconds, "size_mb": size}
    marker.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"vllm {version} (frontend): {venv} ({seconds} s, {size} MB)", flush=True)
    return FrontendRelease(version, venv, wheel)


def _uv(python: str, sink: object) -> list[str]:
    """uv from the kit's environment or PATH; else installed into the release's venv."""
    for argv in ([sys.executable, "-m", "uv"], ["uv"], [python, "-m", "uv"]):
        try:
            if subprocess.run([*argv, "--version"], capture_output=True).returncode == 0:
                return argv
        except FileNotFoundError:
            continue
    subprocess.run([python, "-m", "pip", "install", "-q", "uv"], check=True)
    return [python, "-m", "uv"]


def _size_mb(path: Path) -> int:
    done = subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=False)
    return int(done.stdout.split()[0]) if done.returncode == 0 and done.stdout else -1
