"""Make release environments ahead of the runs that use them: `python -m live.prefetch
cpu:0.30.0 frontend:0.33.0 ...` under `$TITO_VLLM_VENVS` (else the user cache).

CI starts this beside the kit's own tests: an install is mostly network and disk, a test run
mostly CPU, so the two overlap instead of adding up. The live stages then find each
environment made (the install steps are idempotent) and start at once. Needs only the
standard library, `packaging` and uv, so it runs before any tox environment exists.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from live.releases import ReleaseInstallError, default_root, ensure

KINDS = ("cpu", "frontend")


def prefetch(spec: str, root: Path, logs: Path) -> str:
    """One `kind:version` made under `root`; a line saying how it went."""
    kind, _, version = spec.partition(":")
    if kind not in KINDS or not version:
        raise ValueError(f"{spec!r}: expected one of {KINDS} and a version, e.g. cpu:0.30.0")
    t0 = time.monotonic()
    log = logs / f"prefetch-{kind}-{version}.log"
    try:
        if kind == "frontend":
            from live.frontend.install import ensure as ensure_frontend

            ensure_frontend(version, root, log)
        else:
            ensure(kind, version, root, log)
    except ReleaseInstallError as exc:
        return f"{spec}: FAILED after {time.monotonic() - t0:.0f} s ({exc}; log {log})"
    return f"{spec}: ready in {time.monotonic() - t0:.0f} s"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m live.prefetch", description=__doc__)
    p.add_argument("specs", nargs="+", metavar="KIND:VERSION")
    p.add_argument("--root", type=Path, help="default: $TITO_VLLM_VENVS or the user cache")
    args = p.parse_args(argv)
    for spec in args.specs:
        kind, _, version = spec.partition(":")
        if kind not in KINDS or not version:
            p.error(f"{spec!r}: expected KIND:VERSION, KIND one of {', '.join(KINDS)}")
    root = args.root or default_root()
    root.mkdir(parents=True, exist_ok=True)
    failed = False
    for spec in args.specs:
        line = prefetch(spec, root, root / "logs")
        failed = failed or "FAILED" in line
        print(f"prefetch: {line}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
