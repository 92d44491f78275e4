"""`python -m live.standin.install BINDIR`: write BINDIR/vllm, the stand-in executable.

A shell script that execs this interpreter on `live.standin` (an absolute interpreter path, so
it works wherever the live run looks for `vllm`, with no shebang length limit). It is written by
`live/install_gpu.sh` when `TITO_VLLM_STANDIN=1`, in place of installing vLLM, and never by
installing the kit: a kit install must not shadow a real `vllm`.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from . import MARKER, RELEASE_ENV

SCRIPT = """#!/bin/sh
# {marker}: `vllm serve MODEL [flags]` runs the mock with the same flags (live/standin).
{release}exec {python} -m live.standin "$@"
"""


def write_executable(
    bindir: Path, python: str = sys.executable, release: str | None = None
) -> Path:
    """BINDIR/vllm, executable; replaces what was there (never a real vLLM: see the caller).
    `release` (install_gpu.sh's VLLM_VERSION): the vLLM release the mock plays."""
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / "vllm"
    path.unlink(missing_ok=True)
    pinned = f"{RELEASE_ENV}={shlex.quote(release)} " if release else ""
    text = SCRIPT.format(marker=MARKER, python=shlex.quote(python), release=pinned)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m live.standin.install BINDIR", file=sys.stderr)
        return 2
    print(write_executable(Path(args[0]), release=os.environ.get("VLLM_VERSION") or None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
