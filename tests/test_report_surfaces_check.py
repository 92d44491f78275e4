"""The committed matrix page's Release surfaces against the ones CI just rendered: equal
sections pass whatever the run results above them say; a changed one fails, naming the
command that re-renders the page. No network, no wheels: two small Markdown pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.reporting import surfaces, surfaces_check

SURFACES = """\
## Release surfaces

What each release's own code declares that the spec does not say.

| difference | 0.32.0 (full run + surface) | 0.33.0 (surface only (GPU wheels)) |
|---|---|---|
| enum-added: GenerateRequest.output_mode: ['derender'] |  | yes |
| field-added: GenerateRequest.parse_context: dict \\| None |  | yes |
"""


def page(port: int, surfaces_md: str = SURFACES, router: bool = False) -> str:
    """A page as `report --drift` writes it: run results (with a port), failures, surfaces."""
    results = (
        f"# TITO compatibility matrix\n\n## Servers\n\n- base URL: http://127.0.0.1:{port}\n\n"
        "## Failures\n\n```sh\n# sent: POST /inference/v1/generate\n## Release surfaces\n```\n\n"
    )
    tail = "\n\n# Behind a router\n\n### Servers\n\n```sh\n# sent: x\n```\n" if router else ""
    return results + surfaces_md + tail


def test_equal_surfaces_pass_whatever_the_runs_said() -> None:
    assert surfaces_check.stale(page(1, router=True), page(2), "page.md", "matrix.md") is None


def test_a_changed_surface_fails_naming_the_rerender_command() -> None:
    changed = SURFACES.replace("parse_context", "parse_ctx")
    message = surfaces_check.stale(page(1, router=True), page(1, changed), "page.md", "m.md")
    assert message is not None
    assert "page.md: its Release surfaces are not the ones just rendered in m.md" in message
    assert "python3 bootstrap.py -e drift" in message
    assert "-| field-added: GenerateRequest.parse_context" in message
    assert "+| field-added: GenerateRequest.parse_ctx" in message
    assert "Behind a router" not in message.split("\n", 2)[2]  # the router section is not diffed


def test_a_page_without_the_section_is_named() -> None:
    with pytest.raises(surfaces_check.SectionMissing, match="old.md: no '## Release surfaces'"):
        surfaces_check.stale(page(1, ""), page(1), "old.md", "new.md")


def test_the_rendered_heading_is_the_one_looked_for() -> None:
    drift = {"spec_version": "t", "releases": [{"version": "0.33.0", "differences": []}]}
    rendered = surfaces.markdown(drift)
    assert rendered.startswith(surfaces.HEADING + "\n")
    assert surfaces_check.section(rendered)[0] == surfaces.HEADING


def test_main_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.md", tmp_path / "new.md"
    old.write_text(page(1, router=True))
    new.write_text(page(2))
    assert surfaces_check.main([str(old), str(new)]) == 0
    new.write_text(page(2, SURFACES + "| field-added: X.y: int |  | yes |\n"))
    assert surfaces_check.main([str(old), str(new)]) == 1
    assert "+| field-added: X.y: int |  | yes |" in capsys.readouterr().err
    assert surfaces_check.main([str(old), str(tmp_path / "none.md")]) == 2
