"""The results model and its views: JSON (schema-checked), JUnit, terminal, exit codes."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conformance import cli
from conformance.reporting import json_report, junit, terminal
from conformance.requirements import by_id
from conformance.verdicts.results import (
    CheckResult,
    Report,
    ServerInfo,
    SkipKind,
    Status,
    decide,
    exit_code,
)


def make_report(statuses: dict[str, Status], harness_error: str = "") -> Report:
    results = []
    for rid, req in by_id().items():
        status = statuses.get(rid)
        checks = (
            []
            if status is None
            else [
                CheckResult(
                    f"test_x.py::test_{rid}",
                    status,
                    "boom" if status is Status.FAIL else "",
                    "curl -X POST http://x" if status is Status.FAIL else "",
                )
            ]
        )
        results.append(decide(req, checks))
    return Report(
        "tito-conformance",
        "0.1.0",
        "spec",
        ServerInfo("http://127.0.0.1:1", "0.32.0", ["scale-out"], ["scale-out"], "scale-out"),
        "2026-01-01T00:00:00+00:00",
        1.5,
        results,
        harness_error,
    )


def test_decide_rules() -> None:
    req = by_id()["GEN-001"]
    assert decide(req, []).status is Status.SKIP
    both = [CheckResult("a", Status.PASS), CheckResult("b", Status.FAIL, "x")]
    assert decide(req, both).status is Status.FAIL
    assert decide(req, [CheckResult("a", Status.SKIP, "why")]).reason == "why"
    mixed = [CheckResult("a", Status.PASS), CheckResult("b", Status.ERROR, "e")]
    assert decide(req, mixed).status is Status.ERROR


def test_summary_and_exit_codes() -> None:
    ok = make_report({"GEN-001": Status.PASS, "ERR-002": Status.SKIP})
    assert exit_code([ok]) == 0
    warn = make_report({"GEN-001": Status.PASS, "ERR-002": Status.FAIL})
    assert warn.summary.warnings == 1 and warn.summary.failed == 0
    assert exit_code([warn]) == 0
    must = make_report({"GEN-001": Status.FAIL})
    assert must.summary.failed == 1 and exit_code([must]) == 1
    broken = make_report({"GEN-001": Status.ERROR})
    assert exit_code([broken]) == 2
    assert exit_code([make_report({}, harness_error="unreachable")]) == 2


def _inconclusive(report: Report, rid: str) -> Report:
    """`rid`'s one check made inconclusive: its action could not land on the server."""
    result = report.result(rid)
    result.checks = [CheckResult("test_abort.py::x", Status.ERROR, "inconclusive: ...", "", 0.0)]
    result.checks[0].inconclusive = True
    result.status = Status.ERROR
    return report


def test_an_inconclusive_run_is_incomplete_not_broken() -> None:
    """Exit 3: the run's other verdicts stand; a failure or a real harness error still wins."""
    short = _inconclusive(make_report({"GEN-001": Status.PASS}), "ABORT-002")
    assert short.summary.incomplete == 1 and short.summary.verdict == "INCOMPLETE"
    assert exit_code([short]) == 3
    failed = _inconclusive(make_report({"GEN-001": Status.FAIL}), "ABORT-002")
    assert exit_code([failed]) == 1 and failed.summary.verdict == "FAILED"
    broken = _inconclusive(make_report({"GEN-002": Status.ERROR}), "ABORT-002")
    assert exit_code([broken]) == 2
    data = json_report.to_dict(short)
    json_report.validate(data)
    assert data["summary"]["incomplete"] == 1


def test_json_report_validates(tmp_path: Path) -> None:
    report = make_report({"GEN-001": Status.FAIL, "GEN-002": Status.PASS})
    data = json_report.to_dict(report)
    json_report.validate(data)
    assert set(data) == {
        "suite",
        "server",
        "started_at",
        "duration_s",
        "summary",
        "level",
        "differences",
        "requirements",
    }
    assert set(data["requirements"][0]) == {
        "id",
        "level",
        "feature",
        "text",
        "status",
        "reason",
        "skip_kind",
        "blocked_by",
        "attribution",
        "checks",
    }
    json_report.validate(json_report.document([report, report]))
    json_report.write([report], tmp_path / "r.json")
    bad = dict(data, extra=1)
    with pytest.raises(jsonschema.ValidationError):
        json_report.validate(bad)


def test_limit_skips_are_reported_apart() -> None:
    """A skip for the server's configuration is counted and named apart from "absent"."""
    req = by_id()["GEN-REQ-008"]
    reason = "limit: checking n choices needs n = 3; the server takes at most n = 1"
    limited = decide(req, [CheckResult("c", Status.SKIP, reason, skip_kind=SkipKind.LIMIT)])
    absent = decide(by_id()["AUTH-001"], [CheckResult("d", Status.SKIP, "not applicable: x")])
    report = make_report({})
    report.requirements = [limited, absent]
    report.server.limits = {"max_n": 1, "max_model_len": 4096}
    report.server.limits_text = "max_model_len 4096, max n 1"
    assert report.summary.skipped == 2 and report.summary.skipped_for_limits == 1
    data = json_report.to_dict(report)
    json_report.validate(data)
    assert data["server"]["limits"]["max_n"] == 1
    assert [r["skip_kind"] for r in data["requirements"]] == ["limit", "absent"]
    text = terminal.render([report])
    assert "limits: max_model_len 4096, max n 1" in text
    assert "not exercised under this server's limits: GEN-REQ-008" in text
    assert "(1 for limits)" in text


def test_junit_and_terminal(tmp_path: Path) -> None:
    report = make_report({"GEN-001": Status.FAIL, "ERR-002": Status.FAIL})
    junit.write([report], tmp_path / "j.xml")
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert len(root.findall(".//failure")) == 2
    text = terminal.render([report])
    assert "FAIL GEN-001" in text and "WARN ERR-002" in text and "curl" in text


def test_cli_usage_errors() -> None:
    assert cli.main(["run", "--base-url", "http://127.0.0.1:1", "--expect", "nonsense"]) == 2
    assert cli.main(["run", "--base-url", "http://127.0.0.1:1", "--requirement", "X-1"]) == 2
    assert cli.main(["fuzz"]) == 2
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0


def test_cli_unreachable_server_is_harness_error(capsys: pytest.CaptureFixture[str]) -> None:
    from loopback.ports import free_port

    code = cli.main(["run", "--base-url", f"http://127.0.0.1:{free_port()}", "--timeout", "1"])
    assert code == 2
    assert "not reachable" in capsys.readouterr().err


def test_differences_name_each_failing_requirement_once() -> None:
    """The report opens with what the server does differently from the document: one line per
    failing requirement, MUST before SHOULD, each with field-level evidence, never a body."""
    from conformance.requirements import by_id
    from conformance.verdicts.results import CheckResult, Report, ServerInfo, Status, decide

    def result(rid: str, status: Status, message: str = "") -> Any:
        return decide(by_id()[rid], [CheckResult("check", status, message)])

    report = Report(
        "tito-conformance",
        "0",
        "0",
        ServerInfo("http://x", None, [], []),
        "2026-12-03T00:00:00+00:00",
        1.0,
        [
            result("SCHEMA-GEN-001", Status.FAIL, "1 of 1 bodies: at /choices/0: 'x' is missing"),
            result("ERR-003", Status.FAIL, "invalid generate: expected HTTP 400, got 422\nmore"),
            result("LOGP-001", Status.FAIL, "choice 0: entry 0 item 0 token_id is None"),
            result("GEN-001", Status.PASS),
            result("STOP-001", Status.SKIP),
        ],
    )
    found = [(d.requirement, d.level, d.evidence) for d in report.differences()]
    assert found == [
        ("LOGP-001", "MUST", "choice 0: entry 0 item 0 token_id is None"),
        ("SCHEMA-GEN-001", "MUST", "1 of 1 bodies: at /choices/0: 'x' is missing"),
        ("ERR-003", "SHOULD", "invalid generate: expected HTTP 400, got 422"),
    ]  # MUST first, the whole-body schema requirements after the named fields
