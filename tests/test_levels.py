"""Levels a vendor can claim (issue 21): the grouping, the `level` object, badge, product, DIR.

The grouping is data (`conformance.verdicts.levels.GROUPS`); these prove it places every requirement
once, that the level follows the results (a Core MUST failing, a claimed feature failing), and
that `run --product` and `report DIR --badge` carry it to the JSON report, the matrix and SVG.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from conformance import cli
from conformance.reporting import badge, json_report, terminal
from conformance.reporting.matrix import build
from conformance.reporting.matrix_load import ReportFileError, read
from conformance.requirements import Feature, all_requirements, by_id
from conformance.run.embedded import QUICK, embedded_mock
from conformance.run.runner import run
from conformance.server.features import KNOWN_FEATURES
from conformance.verdicts.levels import CORE, EXTENDED, GROUPS, group_of, level_of, members
from conformance.verdicts.results import CheckResult, Report, ServerInfo, Status, decide, exit_code

GREEN_SERVER = ["scale-out", "abort", "text-mode", "render"]


def make_report(
    statuses: dict[str, Status],
    detected: list[str] = GREEN_SERVER,
    claimed: tuple[str, ...] = (),
) -> Report:
    """A report where every listed requirement has one check of that status, the rest pass."""
    results = []
    for rid, req in by_id().items():
        status = statuses.get(rid, Status.PASS)
        results.append(decide(req, [CheckResult(f"t::{rid}", status, "m")]))
    server = ServerInfo("http://127.0.0.1:1", "0.32.0", list(detected), sorted(claimed))
    return Report(
        "tito-conformance", "0.1.0", "spec", server, "2026-01-01T00:00:00+00:00", 1.0, results
    )


# -- the grouping ---------------------------------------------------------------------------
def test_every_requirement_belongs_to_exactly_one_group() -> None:
    placed = Counter(r.id for reqs in members().values() for r in reqs)
    catalogue = [r.id for r in all_requirements()]
    assert sorted(placed) == sorted(catalogue), "a requirement is in no group"
    assert {rid: n for rid, n in placed.items() if n != 1} == {}, "a requirement in two groups"
    features = Counter(f for g in GROUPS for f in g.features)
    assert set(features) == set(Feature) and set(features.values()) == {1}
    moved = Counter(rid for g in GROUPS for rid in g.ids)
    assert set(moved.values()) <= {1} and set(moved) <= set(by_id())
    for group in GROUPS:
        assert not {by_id()[rid].feature for rid in group.ids} & set(group.features), group.name
        assert set(group.reads) <= set(by_id()) and set(group.must_pass) <= set(by_id())
        assert group.detect is None or group.detect in KNOWN_FEATURES


def test_the_grouping_follows_the_document() -> None:
    assert group_of("GEN-001") == group_of("STREAM-002") == group_of("ERR-001") == CORE
    assert group_of("STOP-001") == CORE  # stop_token_ids: tokens in, tokens out
    assert group_of("STOP-006") == "text-mode"  # a stop string needs text
    assert group_of("STOP-005") == group_of("AUTH-002") == "abort"
    assert group_of("ROUTER-001") == "router"  # a deployment, never Core
    assert EXTENDED == (
        "abort",
        "text-mode",
        "logprobs",
        "weight-versions",
        "render",
        "data-parallel",
        "routed-experts",
        "sampling-mask",
        "router",
        "derender-mode",  # release extensions (vLLM 0.33+), not the document's
        "parse-context",
    )
    assert group_of("EXT-DERENDER-002") == "derender-mode"


# -- the level object -----------------------------------------------------------------------
def test_a_failing_core_must_is_core_not_reached() -> None:
    assert level_of(make_report({}))["core"] == "reached"
    assert level_of(make_report({"GEN-RESP-002": Status.FAIL}))["core"] == "not reached"
    assert level_of(make_report({"STREAM-003": Status.ERROR}))["core"] == "not reached"
    # a SHOULD is a warning, not a level: Core stays reached
    assert level_of(make_report({"ERR-002": Status.FAIL}))["core"] == "reached"
    # generate itself must answer: a server that serves none reaches no level
    assert level_of(make_report({"GEN-001": Status.SKIP}))["core"] == "not reached"


def test_extended_states() -> None:
    level = level_of(make_report({"ABORT-002": Status.FAIL, "WV-007": Status.SKIP}))
    assert level["core"] == "reached"  # an extended feature's failure leaves Core as it was
    extended = level["extended"]
    assert list(extended) == list(EXTENDED)
    assert extended["abort"] == "failed"
    assert extended["text-mode"] == extended["render"] == extended["logprobs"] == "passed"
    assert extended["weight-versions"] == "passed"  # WV-007 skipped: not applicable here
    # not detected: absent, even though its checks (a single rank's) passed
    assert extended["data-parallel"] == extended["router"] == "absent"
    assert extended["routed-experts"] == extended["sampling-mask"] == "absent"


def test_flag_outputs_are_judged_by_gen_resp_007_once_present() -> None:
    on = make_report({}, detected=[*GREEN_SERVER, "routed-experts"])
    assert level_of(on)["extended"]["routed-experts"] == "passed"
    claimed = make_report({"GEN-RESP-007": Status.FAIL}, claimed=("sampling-mask",))
    level = level_of(claimed)
    assert level["extended"]["sampling-mask"] == "failed"
    assert level["extended"]["routed-experts"] == "absent"  # neither there nor claimed
    assert level["core"] == "not reached"  # GEN-RESP-007 is Core's too


def test_inconclusive_is_incomplete_not_failed() -> None:
    report = make_report({"ABORT-002": Status.ERROR})
    report.result("ABORT-002").checks[0].inconclusive = True
    assert level_of(report)["extended"]["abort"] == "incomplete"


def test_the_level_is_in_the_json_report_and_the_terminal() -> None:
    report = make_report({"ABORT-002": Status.FAIL})
    data = json_report.to_dict(report)
    json_report.validate(data)
    assert data["level"] == level_of(report)
    assert "product" not in data  # only when the run was given one
    lines = terminal.render([report]).splitlines()
    assert lines[-1].startswith("   level: core reached · passed: text-mode")
    assert "failed: abort" in lines[-1] and lines[-2].lstrip().startswith("FAILED")
    with pytest.raises(jsonschema.ValidationError):
        json_report.validate({**data, "level": {"core": "almost", "extended": {}}})


def test_a_bad_level_is_named_by_report(tmp_path: Path) -> None:
    data = json_report.to_dict(make_report({}))
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**data, "level": {"core": "almost", "extended": {}}}))
    with pytest.raises(ReportFileError, match=r"at \$\.level\.core"):
        read(path)


# -- against the mock: a defect, a claim, the exit code ---------------------------------
def _run(defect: str, ids: set[str], claims: frozenset[str] = frozenset()) -> Report:
    config = QUICK | {"expect": claims, "requirement_ids": frozenset(ids)}
    with embedded_mock("scale-out", (), (defect,), **config) as (_, suite):
        return run(suite)


def test_a_claimed_extended_feature_that_fails_fails_the_run() -> None:
    report = _run("abort-ignored", {"GEN-001", "ABORT-001", "ABORT-002"}, frozenset({"abort"}))
    level = level_of(report)
    assert report.result("ABORT-002").status is Status.FAIL
    assert level["core"] == "reached" and level["extended"]["abort"] == "failed"
    assert exit_code([report]) == 1
    column = build([("r.json", "", json_report.to_dict(report))]).columns[0]
    assert badge.message(column) == ("core ✓", badge.YELLOW)


def test_a_core_defect_on_the_mock_is_core_not_reached() -> None:
    report = _run("finish-reason-null", {"GEN-001", "GEN-RESP-002"})
    assert level_of(report)["core"] == "not reached"
    assert exit_code([report]) == 1
    column = build([("r.json", "", json_report.to_dict(report))]).columns[0]
    assert badge.message(column) == ("failed", badge.RED)


# -- the badge ------------------------------------------------------------------------------
def test_badge_is_valid_xml_and_deterministic() -> None:
    data = json_report.to_dict(make_report({"RENDER-002": Status.FAIL}))
    column = build([("r.json", "", data)]).columns[0]
    svg = badge.badge(column)
    assert svg == badge.badge(column)
    root = ET.fromstring(svg.encode("utf-8"))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    title = root.find("{http://www.w3.org/2000/svg}title")
    assert title is not None
    assert title.text == "TITO: core ✓ +abort +text-mode +logprobs +weight-versions"
    hostile = badge.svg('<a&"b>', "x</text><script/>", badge.RED)
    assert ET.fromstring(hostile.encode("utf-8")).find(".//{*}script") is None
    older = build([("old.json", "", {k: v for k, v in data.items() if k != "level"})])
    assert badge.message(older.columns[0])[0] == "no level reported"


# -- run --product, report DIR --------------------------------------------------------------
def test_product_file_is_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    product = tmp_path / "product.yaml"
    product.write_text(
        'name: Acme <Serve>\nversion: "2.10"\nurl: https://acme.example\n'
        "contact: tito@acme.example\ndeployment: one engine, --enable-scale-out\n",
        encoding="utf-8",
    )
    out = tmp_path / "r.json"
    argv = ["run", "--profile", "scale-out", "--requirement", "GEN-001", "--json-report", str(out)]
    assert cli.main([*argv, "--product", str(product)]) == 0
    assert "product: Acme <Serve> 2.10 (https://acme.example)" in capsys.readouterr().out
    data = json.loads(out.read_text(encoding="utf-8"))
    json_report.validate(data)
    assert data["product"]["name"] == "Acme <Serve>" and data["product"]["version"] == "2.10"
    assert data["level"]["core"] == "reached"
    page = tmp_path / "m.html"
    assert cli.main(["report", str(out), "--html", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "Acme &lt;Serve&gt; 2.10" in html and "<dt>level</dt><dd>core reached" in html
    for bad in ("name: x\nprice: 3\n", "name: x\nversion: 1.10\n", "version: '1'\n", "[1]\n"):
        product.write_text(bad, encoding="utf-8")
        assert cli.main([*argv, "--product", str(product)]) == 2
        assert "product" in capsys.readouterr().err


def test_report_dir_renders_every_json_in_it(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    passing = json_report.to_dict(make_report({}))
    failing = json_report.to_dict(make_report({"GEN-001": Status.FAIL}))
    (reports / "b-vendor.json").write_text(json.dumps(failing), encoding="utf-8")
    (reports / "a-vendor.json").write_text(json.dumps(passing), encoding="utf-8")
    (reports / "notes.txt").write_text("not a report", encoding="utf-8")
    md, svg = tmp_path / "m.md", tmp_path / "badge.svg"
    assert cli.main(["report", str(reports), "--markdown", str(md), "--badge", str(svg)]) == 0
    text = md.read_text(encoding="utf-8")
    assert text.index("1. a-vendor.json") < text.index("2. b-vendor.json")
    assert "- level: core reached" in text and "- level: core not reached" in text
    assert not svg.exists()  # several reports: one badge each, named by report
    assert "core ✓" in (tmp_path / "badge-a-vendor.svg").read_text(encoding="utf-8")
    assert ">failed<" in (tmp_path / "badge-b-vendor.svg").read_text(encoding="utf-8")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["report", str(empty), "--markdown", str(md)]) == 2
