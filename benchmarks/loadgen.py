"""wrk as the load generator: installed when missing, driven with a POST body, CPU accounted.

httpx saturates near 350 requests/s on a 2-core machine, below both servers; wrk (C, one
thread, epoll) drives either far past that. Each run also reports the CPU seconds wrk and the
server spent, so the table shows which side was the bottleneck.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def ensure_wrk() -> str:
    """The wrk binary; installs Debian's package (as root) when it is missing."""
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() != 0:
        raise SystemExit("wrk is missing: apt-get install -y wrk (as root), then run again")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "install", "-y", "wrk"], check=True, env=env, capture_output=True)
    found = shutil.which("wrk")
    if not found:
        raise SystemExit("apt-get install wrk did not give a wrk binary")
    return found


def cpu_seconds(pid: int) -> float:
    """utime + stime of a running process (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Load:
    requests_per_s: float
    errors: int
    wrk_cpu_s: float  # CPU wrk used during the run
    server_cpu_s: float  # CPU the server used during the run
    seconds: float


def _script(body: dict[str, Any] | None) -> Path:
    lua = 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
    if body is not None:
        lua += f"wrk.body = [==[{json.dumps(body)}]==]\n"
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(lua)
    return Path(handle.name)


def run_wrk(
    url: str, body: dict[str, Any] | None, connections: int, seconds: float, server_pid: int
) -> Load:
    """One closed-loop wrk run (1 thread, `connections` keep-alive connections)."""
    script = _script(body)
    before_server = cpu_seconds(server_pid)
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        out = subprocess.run(
            [
                ensure_wrk(),
                "-t1",
                f"-c{connections}",
                f"-d{max(1, round(seconds))}s",
                "--timeout",
                "30s",
                "-s",
                str(script),
                url,
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        script.unlink()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wrk_cpu = (after.ru_utime - before_children.ru_utime) + (
        after.ru_stime - before_children.ru_stime
    )
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not match:
        raise RuntimeError(f"wrk printed no rate:\n{out}")
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: (.*)", out)
    if socket_errors or errors:
        raise RuntimeError(f"{url} answered errors:\n{out}")
    return Load(
        requests_per_s=float(match.group(1)),
        errors=int(errors.group(1)) if errors else 0,
        wrk_cpu_s=wrk_cpu,
        server_cpu_s=cpu_seconds(server_pid) - before_server,
        seconds=seconds,
    )
