"""The catalogue is read when first asked, never at import.

The requirements are declared in the check modules, and those import most of the suite
(`conformance.api`, `conformance.session`, ...). A module that read the catalogue at import time
would have the loader import the check modules while one of them is still being imported: so
nothing does, which importing every module of the kit in a fresh interpreter proves.
"""

from __future__ import annotations

import subprocess
import sys

IMPORT_ALL = """
import importlib, pkgutil, sys
import conformance
from conformance import requirements
from conformance.requirements import defects

names = [m.name for m in pkgutil.walk_packages(conformance.__path__, "conformance.")]
for name in names:
    if not name.endswith("__main__"):
        importlib.import_module(name)
read = [f.__name__ for f in (requirements.all_requirements, requirements.by_id, defects.installed)
        if f.cache_info().currsize]
print(len(names), read)
sys.exit(1 if read else 0)
"""


def test_importing_the_suite_reads_no_catalogue() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert int(done.stdout.split()[0]) > 50, done.stdout
