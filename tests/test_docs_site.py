"""The docs site's own contract, checked without MkDocs (`tox -e docs` builds it with --strict):
the README stays a short front page whose commands CI runs, every page's generated part has a
generator that still finds its data, and the generated catalogue lists every requirement."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from conformance.requirements import all_requirements

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _hooks()


def test_the_readme_is_a_short_front_page_with_the_commands_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in ("python3 bootstrap.py -e conformance", "python3 bootstrap.py -e py"):
        assert command in text and command in ci, command


def test_the_readme_links_resolve() -> None:
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    assert links
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_every_marker_names_a_generator_or_a_file() -> None:
    markers = [m for page in PAGES for m in hooks.MARKER.findall(page.read_text("utf-8"))]
    assert {name for kind, name in markers if kind == "generated"} == set(hooks.GENERATORS)
    for kind, name in markers:
        if kind == "include":
            assert hooks.include(name)


@pytest.mark.parametrize("name", sorted(hooks.GENERATORS))
def test_each_generator_finds_its_data(name: str) -> None:
    assert hooks.GENERATORS[name]().strip()


def test_the_catalogue_lists_every_requirement() -> None:
    page = hooks.requirements()
    for req in all_requirements():
        assert f"\n### {req.id}\n\n**{req.level.value}**" in page, req.id
        assert hooks.prose(req.text) in page, req.id


def test_the_cli_page_shows_every_command() -> None:
    page = hooks.cli()
    assert page.count("usage: ") == len(hooks.COMMANDS)
    for sub in ("run", "requirements", "report", "fuzz", "diff", "live", "drift"):
        assert f"usage: tito-conformance {sub}" in page, sub
    assert "usage: tito-mock --engines N" in page


def test_text_from_data_keeps_its_angle_brackets() -> None:
    assert hooks.prose("generate-tokens-<id> and `<kept>`") == (
        "generate-tokens-&lt;id&gt; and `<kept>`"
    )
