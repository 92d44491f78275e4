"""One vLLM release's own server over the simulated core, for client authors (issue 29, item 6).

`RealFrontend` installs the release (cached), builds the tiny model with the release's
interpreter and starts `serve.py` through the live launcher (its own session, `/health` with a
deadline, a warm-up request, every process stopped on exit). `tito-mock --real-frontend V`
runs one in the foreground; the `tito_vllm_server` pytest fixture (`pytest_plugin.py`) one per
test session and settings.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from conformance.profiles import ALL_PROFILES, API_KEY, MAIN_PROFILES
from loopback.ports import free_port
from loopback.timeouts import ALIVE_POLL_S, FRONTEND_START_S

from ..launcher import LiveServer
from ..profiles import DEFAULT_FRONTEND_VERSION, Backend
from ..releases import ReleaseInstallError, build_model, default_root
from . import install


class FrontendUnavailable(RuntimeError):
    """The release's environment could not be built here (no network, no CPU torch, ...)."""


@dataclass
class RealFrontend:
    """vLLM `version`'s own API server over the simulated core, on 127.0.0.1."""

    version: str = DEFAULT_FRONTEND_VERSION
    flags: Sequence[str] = ("--enable-scale-out",)
    port: int = 0
    env: dict[str, str] = field(default_factory=dict)
    root: Path | None = None
    log_dir: Path | None = None
    start_deadline_s: float = FRONTEND_START_S
    server: LiveServer | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        assert self.server is not None, "not started"
        return self.server.base_url

    @property
    def api_key(self) -> str | None:
        """The `--api-key` this server was started with, if any."""
        flags = list(self.flags)
        return flags[flags.index("--api-key") + 1] if "--api-key" in flags else None

    def start(self) -> RealFrontend:
        root = self.root or default_root()
        logs = self.log_dir or root / "logs"
        try:
            release = install.ensure(self.version, root, logs / f"install-{self.version}.log")
            model = build_model(release.python)
        except (ReleaseInstallError, OSError) as exc:
            raise FrontendUnavailable(f"vLLM {self.version} cannot run here: {exc}") from exc
        backend = Backend("frontend", model, release.python)
        port = self.port or free_port()
        profile = ALL_PROFILES[MAIN_PROFILES[0]]
        argv = backend.argv(profile, port)
        argv = [a for a in argv if a not in profile.flags] + list(self.flags)
        self.server = LiveServer(
            argv,
            port,
            env={**backend.env(profile), **self.env},
            start_deadline_s=self.start_deadline_s,
            api_key=self.api_key,
            log_path=logs / f"server-{release.version}-{port}.log",
        )
        self.server.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()

    def __enter__(self) -> RealFrontend:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tito-mock --real-frontend V",
        description="vLLM V's own API server over a simulated engine core (no GPU): installs "
        "the release into a cached environment, starts it on 127.0.0.1 and serves until "
        "interrupted. Other arguments are vLLM server flags (default --enable-scale-out).",
    )
    p.add_argument("--real-frontend", metavar="V", default=DEFAULT_FRONTEND_VERSION)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--token-ms", type=float, help="simulated ms per token (TITO_SIM_TOKEN_MS)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args, flags = parser().parse_known_args(argv)
    env = {} if args.token_ms is None else {"TITO_SIM_TOKEN_MS": str(args.token_ms)}
    frontend = RealFrontend(args.real_frontend, flags or ["--enable-scale-out"], args.port, env)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    t0 = time.monotonic()
    try:
        frontend.start()
    except FrontendUnavailable as exc:
        print(f"tito-mock: {exc}", file=sys.stderr)
        return 1
    key = f" (key {frontend.api_key})" if frontend.api_key else ""
    print(
        f"vLLM {args.real_frontend} (simulated core) at {frontend.url}{key}, "
        f"up in {time.monotonic() - t0:.1f} s; Ctrl-C stops it",
        flush=True,
    )
    try:
        while not stop.wait(ALIVE_POLL_S):
            if frontend.server is not None and not frontend.server.alive:
                print("tito-mock: the server exited", file=sys.stderr)
                return 1
    finally:
        frontend.stop()
    return 0


__all__ = ["API_KEY", "FrontendUnavailable", "RealFrontend", "main"]

if __name__ == "__main__":
    sys.exit(main())
