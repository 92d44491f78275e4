"""The catalogue is read when first asked, never at import.

The requirements are declared in the check modules, and those import most of the suite
(`conformance.api`, `conformance.session`, ...). A module that read the catalogue at import time
would have the loader import the check modules while one of them is still being imported: so
nothing does, which importing every module of the kit in a fresh interpreter proves.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import requirements

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


HEAD = "from conformance.requirements.model import MUST, Feature, Requirement\n"


def _req(rid: str) -> str:
    return f"Requirement({rid!r}, MUST, Feature.CORE, 'text', 'title')"


@pytest.fixture
def checks_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package of check modules of the test's own, read instead of the kit's."""
    name = f"fake_checks_{tmp_path.name.replace('-', '_')}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(requirements, "CHECKS_PACKAGE", name)
    requirements.all_requirements.cache_clear()
    requirements.by_id.cache_clear()
    yield tmp_path / name
    requirements.all_requirements.cache_clear()
    requirements.by_id.cache_clear()


def test_sections_in_document_order_then_new_ones(checks_package: Path) -> None:
    (checks_package / "test_a.py").write_text(
        HEAD + f"REQUIREMENTS = [{_req('ZED-002')}, {_req('GEN-RESP-001')}, {_req('ZED-010')}]\n"
    )
    (checks_package / "test_b.py").write_text(
        HEAD + f"REQUIREMENTS = [{_req('YAK-001')}, {_req('GEN-001')}, {_req('ZED-001')}]\n"
    )
    ids = [r.id for r in requirements.all_requirements()]
    assert ids == ["GEN-001", "GEN-RESP-001", "ZED-001", "ZED-002", "ZED-010", "YAK-001"]


def test_a_module_without_requirements_is_an_error(checks_package: Path) -> None:
    (checks_package / "test_a.py").write_text("")
    with pytest.raises(ImportError, match="has no REQUIREMENTS list"):
        requirements.all_requirements()


def test_reading_the_catalogue_at_import_is_an_error(checks_package: Path) -> None:
    (checks_package / "test_a.py").write_text(
        HEAD + "from conformance.requirements import by_id\n\nby_id()\nREQUIREMENTS = []\n"
    )
    with pytest.raises(RuntimeError, match="read while it was being loaded"):
        requirements.all_requirements()
