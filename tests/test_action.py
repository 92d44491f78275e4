"""The composite GitHub Action and the vendor's example workflow, run here against the mock.

Each `run:` step is executed with bash as a runner would (inputs reach it through `env`),
`$GITHUB_OUTPUT` pointing at a file. The install step finds the kit already installed in the
environment running these tests; `TITO_ACTION_FRESH_INSTALL=1` makes it install from scratch
into a new virtual environment, as on a runner (.ci/run does that once).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from mock_server.harness.tito_mock import TitoMock

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
WORKFLOW = yaml.safe_load((ROOT / "examples" / "vendor-workflow.yml").read_text(encoding="utf-8"))
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def _expand(value: Any, context: dict[str, str]) -> str:
    return EXPRESSION.sub(lambda m: context[m.group(1)], str(value))


def _bash(script: str, env: dict[str, str], cwd: Path) -> int:
    """As a runner runs `shell: bash`: bash --noprofile --norc -eo pipefail."""
    command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script]
    return subprocess.run(command, env={**os.environ, **env}, cwd=cwd, check=False).returncode


def run_action(inputs: dict[str, str], work: Path) -> tuple[int, dict[str, str], Any]:
    """Every step of action.yml in order: the exit code of the last one run, the outputs, and
    the JSON report they name."""
    temp = work / "runner-temp"
    temp.mkdir()
    if os.environ.get("TITO_ACTION_FRESH_INSTALL") != "1":
        (temp / "tito-conformance").symlink_to(sys.prefix)  # the kit these tests run
    declared = {k: str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    context = {f"inputs.{k}": v for k, v in {**declared, **inputs}.items()}
    context |= {"github.action_path": str(ROOT), "runner.temp": str(temp)}
    output = work / "github-output"
    output.touch()
    code = 0
    for step in ACTION["runs"]["steps"]:
        env = {k: _expand(v, context) for k, v in step.get("env", {}).items()}
        code = _bash(step["run"], {**env, "GITHUB_OUTPUT": str(output)}, work)
        if code:
            break
    pairs = (line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    outputs = dict(pairs)
    return code, outputs, json.loads(Path(outputs["json-report"]).read_text())


def test_the_contract_names_of_inputs_and_outputs() -> None:
    assert {"base-url", "api-key", "expect", "json-report", "junit-xml"} <= set(ACTION["inputs"])
    assert set(ACTION["outputs"]) == {"json-report", "junit-xml"}
    assert ACTION["runs"]["using"] == "composite"
    for step in ACTION["runs"]["steps"]:  # inputs reach the scripts only through env
        assert "${{" not in step["run"], step["name"]


def test_a_conforming_server_passes_and_the_reports_are_where_the_outputs_say(
    tito_mock: TitoMock, tmp_path: Path
) -> None:
    inputs = {
        "base-url": tito_mock.base_url,
        "json-report": "reports/tito.json",
        "junit-xml": "reports/tito.xml",
        "args": "--fuzz-examples 0",
    }
    code, outputs, report = run_action(inputs, tmp_path)
    assert code == 0
    assert outputs["json-report"] == str(tmp_path / "reports" / "tito.json")
    assert report["summary"]["failed"] == 0 and report["summary"]["passed"] > 0
    assert re.fullmatch(r"[0-9a-f]{64}", report["suite"]["document_sha256"])
    assert ET.parse(outputs["junit-xml"]).getroot().tag in ("testsuites", "testsuite")


def test_a_failing_server_fails_the_step_and_still_names_its_reports(
    tito_mock_factory: Callable[..., TitoMock], tmp_path: Path
) -> None:
    mock = tito_mock_factory(defects=["usage-miscount"])
    inputs = {"base-url": mock.base_url, "args": "--requirement GEN-RESP-003"}
    code, _, report = run_action(inputs, tmp_path)
    assert code == 1
    failed = [r["id"] for r in report["requirements"] if r["status"] == "fail"]
    assert failed == ["GEN-RESP-003"]


@pytest.mark.tito_mock(flags=["--api-key", "ci-secret"])
def test_api_key_and_expect_reach_the_suite(tito_mock: TitoMock, tmp_path: Path) -> None:
    key = {"api-key": "ci-secret", "expect": "api-key"}
    inputs = {"base-url": tito_mock.base_url, **key, "args": "--requirement GEN-001"}
    code, _, report = run_action(inputs, tmp_path)
    assert code == 0
    assert "api-key" in report["server"]["claimed_features"]
    assert "api-key" in report["server"]["detected_features"]


def test_the_example_workflow_uses_only_declared_inputs_and_its_steps_pass(
    tito_mock: TitoMock, tmp_path: Path
) -> None:
    steps = WORKFLOW["jobs"]["tito"]["steps"]
    (action,) = [s for s in steps if s.get("uses") == "./tito-kit"]
    assert set(action["with"]) <= set(ACTION["inputs"])
    assert "always()" in [s for s in steps if "upload-artifact" in s.get("uses", "")][0]["if"]
    env = {**WORKFLOW["jobs"]["tito"]["env"], "BASE_URL": tito_mock.base_url}
    for step in steps:
        if "run" in step:
            assert _bash(step["run"], env, tmp_path) == 0, step["name"]
