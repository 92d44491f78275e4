"""A stand-in `vllm` executable: `vllm serve MODEL [flags]` runs the mock with the same flags.

No GPU runner is reachable from CI, so the GPU path of the live run (`python -m live --backend
gpu`, `tox -e live`) is proven with this executable on its `--vllm`: everything but the engine
(argv, environment, readiness, the suite per profile, the fuzz, the gate, the reports) runs for
real. `flags` maps vLLM's flags to the mock's, `__main__` execs the mock, `install` writes the
executable. The executable carries `MARKER`, so the live run knows it tests the mock, to which
no vLLM deviation applies.
"""

from __future__ import annotations

import shutil
from pathlib import Path

MARKER = "tito-conformance: vllm stand-in"
"""A line of the stand-in executable; a real `vllm` never has it."""
RELEASE_ENV = "TITO_STANDIN_VLLM_VERSION"
"""Set by an executable installed for one release: the mock plays that release."""


def is_standin(vllm: str) -> bool:
    """Whether the `vllm` executable (a path, or a name on PATH) is this stand-in."""
    found = shutil.which(vllm) or vllm
    try:
        with Path(found).open("rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return MARKER.encode() in head
