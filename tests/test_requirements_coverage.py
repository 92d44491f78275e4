"""`tito-conformance requirements --coverage`: every requirement, and the ways the kit can fail
it; a MUST with none is a hole, and the command says so with exit code 1."""

from __future__ import annotations

import ast
import itertools
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import coverage
from conformance.cli import main
from conformance.fuzz import findings, stateful
from conformance.fuzz.covers import fuzz_covers, sequence_covers
from conformance.fuzz.engine import _CHECK_OF_FAILURE
from conformance.fuzz.expectations import operations
from conformance.fuzz.oracles import OUR_CHECKS
from conformance.fuzz.settings import ServerFacts
from conformance.requirements import (
    MUST,
    SHOULD,
    Feature,
    Level,
    Requirement,
    all_requirements,
    by_id,
    defects,
)
from conformance.requirements.defects import DEFECTS_GROUP as GROUP
from conformance.requirements.defects import installed
from mock_server.behaviour.defects import DEFECTS
from mock_server.router.policy import ROUTER_DEFECTS


@pytest.fixture(scope="module")
def matrix() -> coverage.Coverage:
    return coverage.collect()


def test_matrix_lists_every_requirement_in_catalogue_order(matrix: coverage.Coverage) -> None:
    assert [r.id for r in matrix.rows] == [r.id for r in all_requirements()]
    assert not matrix.notes, matrix.notes


def test_every_must_has_a_way_to_fail(matrix: coverage.Coverage) -> None:
    assert matrix.without_ways(MUST) == []
    assert coverage.exit_code(matrix) == 0


def test_defect_column_reads_the_mock_catalogue(matrix: coverage.Coverage) -> None:
    """Through the entry point, not an import: a requirement a defect names counts it."""
    pairs = coverage.defect_counts()
    catalogues = [*DEFECTS.values(), *ROUTER_DEFECTS.values()]  # the mock's and its router's
    assert pairs == (Counter(r for d in catalogues for r in set(d.requirements)), [])
    row = {r.id: r for r in matrix.rows}["GEN-RESP-003"]
    assert "GEN-RESP-003" in DEFECTS["usage-miscount"].requirements
    assert row.counts["defect"] >= 1


def test_suite_and_fuzz_columns(matrix: coverage.Coverage) -> None:
    rows = {r.id: r for r in matrix.rows}
    assert all(r.counts["suite"] >= 1 for r in matrix.rows)  # every requirement has a check
    assert {rid for rid, r in rows.items() if r.counts["fuzz"]} == fuzz_covers()


def _requirements_for_range() -> set[str]:
    """Every ID `requirements_for` returns over the inputs the fuzzer gives it."""
    checks = {*_CHECK_OF_FAILURE.values(), *(c.__name__ for c in OUR_CHECKS)}
    checks |= {"answer_budget", "server_survives", "oov_rejected", "media_type_rejected", "x"}
    ops = [*operations(), "unknownOperation"]
    statuses = (None, 200, 400, 401, 403, 404, 405, 415, 422, 500)
    facts = [ServerFacts(p) for p in ("scale-out", "tokens-only", "disabled")]
    found: set[str] = set()
    for check, op, group, status, fact, stream in itertools.product(
        checks, ops, findings.GROUPS, statuses, facts, (False, True)
    ):
        found.update(findings.requirements_for(check, op, group, status, fact, stream))
    return found


def _stateful_ids() -> set[str]:
    """The requirement each stateful `_fail(...)` call files under (its last argument)."""
    tree = ast.parse(Path(stateful.__file__).read_text())
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_fail":
            last = node.args[-1]
            assert isinstance(last, ast.Constant), ast.unparse(node)
            ids.add(str(last.value))
    return ids


def test_fuzz_covers_is_what_the_fuzzer_can_file_under() -> None:
    sequences = set().union(*sequence_covers().values())
    assert _stateful_ids() <= sequences
    assert _requirements_for_range() | sequences == fuzz_covers()
    assert set(fuzz_covers()) <= set(by_id())


def test_diff_column_is_what_requirements_declare(matrix: coverage.Coverage) -> None:
    """Every case a requirement names is in the corpus and runs where the requirement can be
    judged (a case no requirement governs is allowed: the diff still compares it)."""
    from conformance.diff.corpus import CORPUS

    cases = {c.name: c for c in CORPUS}
    for r in all_requirements():
        for name in r.diff:
            assert name in cases, f"{r.id} names diff case {name!r}, not in the corpus"
    rows = {r.id: r for r in matrix.rows}
    assert rows["ABORT-002"].counts["diff"] == len(by_id()["ABORT-002"].diff) >= 1
    assert sum(1 for r in all_requirements() if r.diff) >= 60


def test_a_requirement_reads_its_defects_from_the_catalogue() -> None:
    """The link lives on the defect's side only: `Requirement.defects` is what the installed
    catalogue names (the mock's and its router's), every requirement can be failed by some
    defect, and the catalogue names no ID the catalogue of requirements lacks."""
    derived = {(d, r.id) for r in all_requirements() for d in r.defects}
    catalogue = {(d.name, rid) for d in DEFECTS.values() for rid in d.requirements}
    catalogue |= {(d.name, rid) for d in ROUTER_DEFECTS.values() for rid in d.requirements}
    assert derived == catalogue
    assert [r.id for r in all_requirements() if not r.defects] == []
    assert installed().unknown(by_id()) == {}


class _Catalogue:
    """An installed catalogue as `importlib.metadata` hands it over."""

    def __init__(self, name: str, pairs: object) -> None:
        self.name, self.pairs = name, pairs

    def load(self) -> object:
        if isinstance(self.pairs, Exception):
            raise self.pairs
        return lambda: self.pairs


@pytest.fixture
def catalogues(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[_Catalogue]]:
    """The catalogues `conformance.requirements.defects` finds installed: these, and no other."""
    found: list[_Catalogue] = []
    monkeypatch.setattr(defects, "entry_points", lambda group: found)
    defects.forget()
    yield found
    defects.forget()


def test_an_unknown_id_in_a_catalogue_is_reported(catalogues: list[_Catalogue]) -> None:
    catalogues.append(_Catalogue("other", [("typo", ("GEN-001", "NOPE-001"))]))
    assert by_id()["GEN-001"].defects == ("typo",)
    assert installed().unknown(by_id()) == {"typo": ("NOPE-001",)}
    assert "defect names unknown requirement(s): NOPE-001" in coverage.collect().notes


def test_without_a_catalogue_no_requirement_has_defects(catalogues: list[_Catalogue]) -> None:
    assert all(r.defects == () for r in all_requirements())
    counts, notes = coverage.defect_counts()
    assert not counts and notes == [f"no defect catalogue installed (entry-point group {GROUP})"]
    catalogues.append(_Catalogue("broken", ValueError("nope")))
    defects.forget()
    assert coverage.defect_counts()[1] == [
        "defect catalogue 'broken' unavailable: ValueError: nope"
    ]


def test_the_map_lives_in_the_requirements() -> None:
    """The anchors and fuzz filing are read from the catalogue; each ground has one owner."""
    from conformance.grounds import graph, probes
    from conformance.server import features

    assert {r.anchor: r.id for r in all_requirements() if r.anchor} == features.anchors()
    assert set(graph.OWNED.values()) == set(probes.PROBES)  # every probe has one owner
    assert len(set(graph.OWNED.values())) == len(graph.OWNED)
    assert set(graph.OWNED) <= {r.id for r in all_requirements()}  # each a real requirement
    assert set(graph.foundations()) == set(graph.OWNED)
    assert all(r.fuzz or r.id not in fuzz_covers() or r.sequences for r in all_requirements())
    orders = [rule.order for r in all_requirements() for rule in r.fuzz]
    assert min(orders) > 0 and len(set(orders)) >= 10


def test_a_check_needs_what_its_requirement_needs() -> None:
    from conformance.registry import all_checks, needs_of

    for name, ids in all_checks().items():
        module, _, attr = name.rpartition(".")
        fn = getattr(__import__(module, fromlist=[attr]), attr)
        wanted = {f for rid in ids for f in by_id()[rid].needs}
        assert wanted <= set(needs_of(fn).features), name


def test_cli_exits_0_and_prints_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["requirements", "--coverage"]) == 0
    lines = capsys.readouterr().out.splitlines()
    must = sum(r.level is MUST for r in all_requirements())
    assert lines[-1] == (
        f"coverage: {must}/{must} MUST requirements have a way to fail; "
        f"0 of {len(all_requirements())} requirements have none"
    )
    assert re.match(r"^GEN-001 +MUST +suite \d+ +fuzz ✓ +diff \d+ +defect \d+$", lines[0])
    assert len(lines) == len(all_requirements()) + 1


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["requirements", "--coverage", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in data["requirements"]] == list(by_id())
    assert data["must_without_way_to_fail"] == []


def test_plain_requirements_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["requirements"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{r.id:<13} {r.level.value:<6} {r.feature.value:<16} {r.title}" for r in all_requirements()
    ]


def _req(rid: str, level: Level) -> Requirement:
    return Requirement(rid, level, Feature.CORE, "text", "title")


def test_a_must_without_a_way_to_fail_exits_1() -> None:
    reqs = [_req("X-001", MUST), _req("X-002", MUST), _req("X-003", SHOULD)]
    built = coverage.build(reqs, {"X-001": 2}, {"X-001"}, {}, {"X-001": 1, "NOPE-001": 1})
    assert built.without_ways(MUST) == ["X-002"]
    assert built.without_ways() == ["X-002", "X-003"]
    assert coverage.exit_code(built) == 1
    text = coverage.render(built)
    assert "X-001  MUST    suite 2   fuzz ✓   diff -   defect 1" in text
    assert "defect names unknown requirement(s): NOPE-001" in text
    assert text.splitlines()[-2:] == [
        "coverage: 1/2 MUST requirements have a way to fail; 2 of 3 requirements have none",
        "MUST without a way to fail: X-002",
    ]
    fine = coverage.build(reqs[:1], {"X-001": 1}, (), {}, {})
    assert coverage.exit_code(fine) == 0
