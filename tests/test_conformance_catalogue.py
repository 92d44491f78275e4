"""The requirement catalogue itself: quoted truthfully, complete, every requirement checked."""

from __future__ import annotations

import re

import pytest

from conformance.document import document_text
from conformance.registry import all_checks, checks
from conformance.requirements import Level, Source, all_requirements, by_id

ID = re.compile(r"^[A-Z]+(-[A-Z]+)?-\d{3}$")


def test_ids_unique_and_well_formed() -> None:
    ids = [r.id for r in all_requirements()]
    assert len(ids) == len(set(ids))
    assert all(ID.match(i) for i in ids), [i for i in ids if not ID.match(i)]
    assert 80 <= len(ids) <= 150


@pytest.mark.parametrize("req", all_requirements(), ids=lambda r: r.id)
def test_quote_is_in_the_document(req: object) -> None:
    from conformance.requirements import Requirement

    assert isinstance(req, Requirement)
    if req.source in (Source.DOCUMENT, Source.DERIVED):  # a router's duty quotes its source
        assert req.text in document_text(), f"{req.id} misquotes the document: {req.text!r}"
    if req.source is Source.DERIVED:
        assert req.evidence, f"{req.id}: a derived duty says how it follows"
    elif req.source is Source.VLLM:
        assert req.level is Level.SHOULD, f"{req.id}: extras from vLLM are SHOULD"
        assert req.evidence, f"{req.id}: a vLLM extra names its evidence"
    assert req.title and req.text


def test_every_requirement_has_a_check() -> None:
    decided = {rid for ids in all_checks().values() for rid in ids}
    missing = sorted(set(by_id()) - decided)
    assert not missing, f"requirements without a check: {missing}"


def test_every_check_names_known_requirements() -> None:
    for name, ids in all_checks().items():
        assert ids, name
        assert set(ids) <= set(by_id()), name


def test_unknown_requirement_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tagging reads no catalogue (the catalogue is declared beside the checks); reading the
    checks does, and a typo is an error there."""
    from conformance import registry

    for table in ("_REGISTRY", "_BUILDS_ON", "_GROUNDS"):
        monkeypatch.setattr(registry, table, dict(getattr(registry, table)))

    @checks("NOPE-999")
    def typo() -> None: ...

    @checks("GEN-001", builds_on=("NOPE-998",))
    def grounded_on_a_typo() -> None: ...

    with pytest.raises(ValueError, match=r"unknown requirement id\(s\) in .*typo: NOPE-999"):
        all_checks()
    with pytest.raises(ValueError, match=r"in .*grounded_on_a_typo: NOPE-998"):
        registry.needs_of(grounded_on_a_typo)
    with pytest.raises(ValueError):
        checks()


def test_expected_errors_are_not_empty() -> None:
    """A2A TCK #202: a requirement about rejecting input must say which status it expects."""
    for req in all_requirements():
        lowered = req.title.lower()
        if " is a 400" in lowered or "are a 400" in lowered or "refused with a 400" in lowered:
            assert req.expected_status == 400, req.id
        if "401" in req.title:
            assert req.expected_status == 401, req.id
        if "403" in req.title and req.feature.value == "disabled gating":
            assert req.expected_status == 403, req.id


def test_document_copy_matches_shared_source() -> None:
    from pathlib import Path

    shared = Path("/work/shared/spec/tito-api.md")
    if not shared.exists():
        pytest.skip("the shared source is not on this machine (fresh clone)")
    assert shared.read_text(encoding="utf-8") == document_text()


def test_checks_declare_what_they_need() -> None:
    """Applicability is data the collector decides before a check runs, never a call inside it
    (Gateway API's `Features`): a check body that skips itself could hide a gap."""
    import inspect

    from conformance.registry import needs_of

    all_checks()
    from conformance import checks as package

    for module in package.__dict__.values():
        if not inspect.ismodule(module):
            continue
        for name, fn in vars(module).items():
            if not name.startswith("test_") or not callable(fn):
                continue
            source = inspect.getsource(fn)
            assert "gate.need(" not in source and "gate.need_n(" not in source, name
            # GEN-001 judges a broken generate itself, and LOAD-001 a hung one (a lost request)
            if name not in ("test_minimal_generate", "test_requests_sent_together_all_end"):
                assert needs_of(fn).features, f"{name} declares no needs"
