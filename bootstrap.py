#!/usr/bin/env python3
"""Run tox from a virtual environment of its own: `python3 bootstrap.py -e conformance`.

A distribution's own Python refuses `pip install` into itself (Debian 12's answers
`error: externally-managed-environment`, PEP 668), so the README's commands must not install
tox there. This script makes `.venv-tox` once, with the running interpreter and the tox this
kit asks for, remakes it when a different interpreter runs it (tox's environments are built
from tox's own Python), and hands every argument to tox. Standard library only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv-tox"
TOX = "tox>=4.11"
BIN = "Scripts" if os.name == "nt" else "bin"


def _ready(python: Path) -> bool:
    """The environment exists, has tox, and was made from the interpreter running us."""
    if not python.exists():
        return False
    probe = "import sys, tox; print(sys.base_prefix)"
    found = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False)
    return found.returncode == 0 and found.stdout.strip() == sys.base_prefix


def _make(python: Path) -> None:
    print(f"bootstrap: creating {VENV.name} with {TOX} for {sys.executable}", flush=True)
    try:
        venv.create(VENV, with_pip=True, clear=True)
    except subprocess.CalledProcessError:
        sys.exit(
            "bootstrap: this Python cannot make a virtual environment with pip (no ensurepip);"
            " on Debian or Ubuntu: apt install python3-venv"
        )
    subprocess.run([python, "-m", "pip", "install", "-q", TOX], check=True)


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 - any python3 may run this file
        sys.exit(f"bootstrap: the kit needs Python 3.11+, this is {sys.version.split()[0]}")
    python = VENV / BIN / ("python.exe" if os.name == "nt" else "python")
    if not _ready(python):
        _make(python)
    os.chdir(ROOT)
    return subprocess.call([python, "-m", "tox", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
