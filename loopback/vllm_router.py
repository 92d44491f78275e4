"""vllm-router, vLLM's Rust router: which release the kit means, where its binary is, and the
command line that starts it in front of engines on this machine.

The mock's fleet runs it when it is there; `live.router` installs a release of it in an
environment of its own (and puts it in `TITO_VLLM_ROUTER` for the tests).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from .ports import HOST, free_port

PACKAGE = "vllm-router"
DEFAULT_VERSION = "0.1.17"
"""The release the facts in issue 20 were measured with; pinned so runs compare."""
BINARY_ENV = "TITO_VLLM_ROUTER"
HOW_TO_GET = (
    f"{PACKAGE} not found: install it in a venv of its own (python3 -m venv R && "
    f"R/bin/pip install {PACKAGE}=={DEFAULT_VERSION}) and set {BINARY_ENV}=R/bin/{PACKAGE}, "
    f"or put {PACKAGE} on PATH"
)


def find_binary() -> str | None:
    """`$TITO_VLLM_ROUTER` when it is an executable (when set, nothing else is looked at),
    else `vllm-router` on PATH, else None."""
    given = os.environ.get(BINARY_ENV)
    if given:
        return given if os.path.isfile(given) and os.access(given, os.X_OK) else None
    return shutil.which(PACKAGE)


def command_line(
    binary: Path | str,
    engine_urls: Sequence[str],
    port: int,
    *,
    host: str = HOST,
    policy: str = "round_robin",
    api_key: str | None = None,
    extra: Sequence[str] = (),
    log_level: str = "warning",
) -> list[str]:
    """The router on `host:port`, the engines as its workers, `extra` last. Its metrics port
    is a free one: it binds 127.0.0.1:29000 otherwise (whatever its --help says), and a second
    router (xdist workers, a benchmark beside a test) then panics at start."""
    argv = [str(binary), "--host", host, "--port", str(port)]
    argv += ["--worker-urls", *engine_urls, "--policy", policy, "--log-level", log_level]
    argv += ["--prometheus-port", str(free_port())]
    if api_key is not None:
        argv += ["--api-key", api_key]
    return [*argv, *extra]
