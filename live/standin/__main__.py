"""`vllm serve MODEL [flags]` as the stand-in answers it: exec the mock with the same flags.

Exec, not a child: the process the live run started is the server, so its session, signals,
exit code and readiness (`/health`) are the mock's own, as they are vLLM's API server's.
"""

from __future__ import annotations

import os
import sys

from . import RELEASE_ENV
from .flags import StandinUsage, to_mock_argv


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        mock_argv = [sys.executable, "-m", "mock_server", *to_mock_argv(args)]
        release = os.environ.get(RELEASE_ENV)
        if release:  # installed for one release (install_gpu.sh with VLLM_VERSION)
            mock_argv += ["--mock-vllm-version", ".".join(release.split(".")[:2])]
    except StandinUsage as exc:
        print(f"vllm (tito-conformance stand-in): error: {exc}", file=sys.stderr)
        return 2
    print(f"vllm (tito-conformance stand-in): exec {' '.join(mock_argv)}", flush=True)
    os.execv(sys.executable, mock_argv)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
