"""The README's client examples run as a client author's own test files, so they cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mock_server.defects import DEFECTS

pytest_plugins = ["pytester"]

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## Test your client against the mock"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end != -1 else None]


def _examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", _section(), flags=re.S)


def test_the_readme_shows_each_client_kind() -> None:
    code = "\n".join(_examples())
    for needle in ("httpx.Client(", "httpx.AsyncClient(", "aiohttp.", "openai.OpenAI(", "respx"):
        assert needle in code, needle


def test_the_readme_examples_pass_as_a_client_authors_tests(pytester: pytest.Pytester) -> None:
    examples = _examples()
    pytester.makepyfile(**{f"test_example_{i}": code for i, code in enumerate(examples)})
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-W", "error::pytest.PytestUnknownMarkWarning"
    )
    tests = sum(code.count("\ndef test_") for code in examples)
    result.assert_outcomes(passed=tests)
    assert tests >= 7


def test_the_defects_the_readme_lists_exist() -> None:
    listed = re.findall(r"^\| `([a-z0-9-]+)` \|", _section(), flags=re.M)
    assert "abort-ignored" in listed
    assert [name for name in listed if name not in DEFECTS] == []
