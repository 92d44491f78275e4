"""The Python examples of the README and the docs run as a client author's own test files, so
they cannot rot.

Every ```python block of README.md and docs/**/*.md that holds a test is a test file of its
own, and all of them run in one pytest session, as a project that installed the kit would run
them (its fixtures come from the installed plugin). A block without a test must still compile:
no page shows code nobody ran.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mock_server.behaviour.defects import DEFECTS

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[^\n]*\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)
DEFECT_ROW = re.compile(r"^\| `([a-z0-9-]+)` \|", re.M)


def _examples() -> list[tuple[str, str]]:
    """(where, code) of every Python block, in page order; an indented block is dedented."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            indent = match["indent"]
            lines = match["code"].splitlines(keepends=True)
            code = "".join(line.removeprefix(indent) for line in lines)
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{page.relative_to(ROOT)}:{line}", code))
    return found


def _tests() -> list[tuple[str, str]]:
    return [(where, code) for where, code in _examples() if "\ndef test_" in "\n" + code]


def _module_name(where: str, index: int) -> str:
    stem = re.sub(r"[^a-z0-9]+", "_", where.split(":", 1)[0].lower().removesuffix(".md"))
    return f"test_example_{index}_{stem.strip('_')}"


def test_the_docs_show_each_client_kind() -> None:
    code = "\n".join(code for _, code in _tests())
    for needle in (
        "httpx.Client(",
        "httpx.AsyncClient(",
        "aiohttp.",
        "openai.OpenAI(",
        "respx",
        "tito_mock_fleet",
    ):
        assert needle in code, needle


def test_every_other_python_block_compiles() -> None:
    others = [(where, code) for where, code in _examples() if (where, code) not in _tests()]
    for where, code in others:
        compile(code, where, "exec")


def test_the_examples_pass_as_a_client_authors_tests(pytester: pytest.Pytester) -> None:
    examples = _tests()
    files = {_module_name(where, i): code for i, (where, code) in enumerate(examples)}
    pytester.makepyfile(**files)
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-W", "error::pytest.PytestUnknownMarkWarning"
    )
    tests = sum(("\n" + code).count("\ndef test_") for _, code in examples)
    result.assert_outcomes(passed=tests)
    assert tests >= 8


def test_the_defects_the_docs_list_exist() -> None:
    """Every hand-written table of defects (a `| defect |` header) names real ones."""
    listed = []
    for page in PAGES:
        for table in re.findall(r"^\| defect \|.*?(?=^[^|]|\Z)", page.read_text(), re.M | re.S):
            listed += DEFECT_ROW.findall(table)
    assert "abort-ignored" in listed
    assert [name for name in listed if name not in DEFECTS] == []
