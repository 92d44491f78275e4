"""vllm-router, vLLM's Rust router, in front of TITO engines (issue 20): installed, started.

The router is a PyPI wheel (a Python launcher around a Rust binary). It gets a virtual
environment of its own per version, beside the vLLM release environments (`live.releases`),
so its pins (fastapi, aiohttp, ...) never touch the kit's environment and a second run reuses
the install. Which release, and its command line, are `loopback.vllm_router`'s (the mock's
fleet starts it too). It is started as a server of its own session (`ServerProcess`), so a
stop takes every process it made, and it is up when its `/health` answers 200: it waits for
every worker's /health before it serves.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from conformance.server.process import ServerProcess, ServerStartError
from live.releases import ReleaseInstallError, default_root, make_venv, run_step
from loopback.ports import free_port
from loopback.timeouts import INDEX_READ_S, POLL_S, ROUTER_START_S
from loopback.vllm_router import DEFAULT_VERSION, PACKAGE, command_line

__all__ = [
    "RouterInstallError",
    "RouterProcess",
    "ServerStartError",
    "available_versions",
    "router_env",
    "routers_root",
    "start_router",
]

_MARKER = ".tito-installed"  # written last: a venv without it is a broken install, redone
_VERSION = re.compile(r"^\d+(\.\d+)*([.+-]?[0-9A-Za-z.]+)?$")


class RouterInstallError(ReleaseInstallError):
    """The router could not be installed; the message carries the tail of the install log."""


def routers_root() -> Path:
    """`$TITO_ROUTER_VENVS`, else `routers/` beside the vLLM release environments."""
    env = os.environ.get("TITO_ROUTER_VENVS")
    return Path(env) if env else default_root().parent / "routers"


def router_env(version: str | None = None, root: Path | None = None) -> Path:
    """The `vllm-router` binary of `version` (default DEFAULT_VERSION), installed on first use.

    One environment per version under `routers_root()`, reused when its install finished; a
    file lock keeps two processes (xdist workers, a benchmark) from installing it at once.
    """
    version = version or DEFAULT_VERSION
    if not _VERSION.match(version):
        raise ValueError(f"{PACKAGE}: {version!r} is not a version")
    venv = (root or routers_root()) / f"{PACKAGE}-{version}"
    binary = venv / "bin" / PACKAGE
    if (venv / _MARKER).exists() and binary.exists():
        return binary
    venv.parent.mkdir(parents=True, exist_ok=True)
    log = venv.parent / f"{venv.name}.install.log"
    with _locked(venv.parent / f".{venv.name}.lock"):
        if (venv / _MARKER).exists() and binary.exists():  # another process just made it
            return binary
        shutil.rmtree(venv, ignore_errors=True)  # a half-made one, from an interrupted run
        t0 = time.monotonic()
        try:
            with log.open("w", encoding="utf-8") as sink:
                run_step(make_venv(venv), sink, os.environ)
                run_step(_install_argv(venv, f"{PACKAGE}=={version}"), sink, os.environ)
        except ReleaseInstallError as exc:
            shutil.rmtree(venv, ignore_errors=True)  # the log stays, for the message
            raise RouterInstallError(f"{exc}; install log tail:\n{_tail(log)}") from exc
        if not binary.exists():
            raise RouterInstallError(f"{PACKAGE} {version} installed no {binary}")
        (venv / _MARKER).write_text(f"{version}\n", encoding="utf-8")
    print(f"{PACKAGE} {version}: {venv} ({time.monotonic() - t0:.1f} s)", flush=True)
    return binary


def _install_argv(venv: Path, requirement: str) -> list[str]:
    """uv when the kit has it (as `live.releases` makes venvs with it), else the venv's pip.

    Wheels only: a release without one for this platform (0.1.9 and 0.1.10 on x86_64 Linux)
    would otherwise be built from source, which needs Rust and the crate registry; it fails at
    once instead. uv does not read pip's PIP_FIND_LINKS, so it is passed on (as
    `install_cpu.sh` does); pip reads it (and the machine's pip.conf) itself.
    """
    python = str(venv / "bin" / "python")
    uv = _uv()
    if uv is None:
        return [python, "-m", "pip", "install", "-q", "--only-binary", PACKAGE, requirement]
    links = [a for d in os.environ.get("PIP_FIND_LINKS", "").split() for a in ("--find-links", d)]
    wheels_only = ["--no-build-package", PACKAGE]
    return [*uv, "pip", "install", "-q", "--python", python, *links, *wheels_only, requirement]


def _uv() -> list[str] | None:
    probe = subprocess.run([sys.executable, "-m", "uv", "--version"], capture_output=True)
    if probe.returncode == 0:
        return [sys.executable, "-m", "uv"]
    found = shutil.which("uv")
    return [found] if found else None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def available_versions(timeout_s: float = INDEX_READ_S) -> list[str]:
    """The router's releases on the package index, newest first (`pip index versions`).

    Not all install here: `router_env` takes wheels only, and 0.1.9 and 0.1.10 have none for
    x86_64 Linux (0.1.11 and later do).
    """
    done = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", PACKAGE],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    match = re.search(r"Available versions:\s*(.+)", done.stdout)
    if done.returncode != 0 or not match:
        raise RouterInstallError(f"pip index versions {PACKAGE} failed:\n{done.stderr[-2000:]}")
    return [v.strip() for v in match.group(1).split(",") if v.strip()]


@dataclass(eq=False)
class RouterProcess(ServerProcess):
    """A running router: `url`, `stop()`; a context manager that stops it on exit."""

    engine_urls: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return self.base_url

    def __enter__(self) -> Self:
        return self if self.alive else self.start()  # `start_router` has started it


def start_router(
    binary: Path | str,
    engine_urls: Sequence[str],
    *,
    port: int | None = None,
    policy: str = "round_robin",
    api_key: str | None = None,
    extra: Sequence[str] = (),
    start_deadline_s: float = ROUTER_START_S,
    log_path: Path | None = None,
) -> RouterProcess:
    """The router, started and answering `GET /health` (so every engine answered its own).

    The engines must be up already: the router checks them at start and then only every
    `--worker-startup-check-interval` seconds (30 by default). A router that exits or is not
    up within `start_deadline_s` raises ServerStartError with the tail of its log (a temporary
    file unless `log_path` is given).
    """
    if not engine_urls:
        raise ValueError("start_router: give at least one engine URL")
    port = port or free_port()
    router = RouterProcess(
        command_line(binary, engine_urls, port, policy=policy, api_key=api_key, extra=extra),
        port,
        start_deadline_s=start_deadline_s,
        up_statuses=(200,),
        poll_s=POLL_S,
        log_path=log_path,
        engine_urls=tuple(engine_urls),
    )
    return router.start()
