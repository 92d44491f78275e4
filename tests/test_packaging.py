"""What users of the installed kit rely on: one version, a --version that names the documents,
and a pytest plugin that costs nothing until a fixture is used."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import conformance
from conformance.cli import main
from conformance.document import SPEC_VERSION, document_text

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_version_is_written_once_in_pyproject() -> None:
    assert conformance.__version__ == PYPROJECT["project"]["version"]


def test_version_names_the_kit_the_spec_and_the_documents_hash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code in (0, None)
    out = capsys.readouterr().out
    digest = hashlib.sha256(document_text().encode("utf-8")).hexdigest()
    assert out.startswith(f"tito-conformance {conformance.__version__} (spec {SPEC_VERSION}")
    assert digest[:12] in out


def test_the_client_plugin_is_registered_and_imports_nothing_until_used() -> None:
    assert PYPROJECT["project"]["entry-points"]["pytest11"]["tito_mock"] == (
        "mock_server.pytest_plugin"
    )
    probe = (
        "import sys, mock_server.pytest_plugin; "
        "print(sorted(m for m in ('uvicorn', 'starlette', 'mock_server.serve.app', 'respx') "
        "if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "[]"
