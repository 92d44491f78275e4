"""Scopes and teardown of the `tito_mock` fixtures, seen from a client author's test run."""

from __future__ import annotations

import httpx
import pytest

pytest_plugins = ["pytester"]

MODULE_SCOPED = """
import httpx, pytest

pytestmark = pytest.mark.tito_mock(scope="module")
BODY = {"token_ids": [1, 2], "sampling_params": {"max_tokens": 1}}

def test_first(tito_mock, urls):
    urls.write(tito_mock.base_url)
    httpx.post(tito_mock.url("/inference/v1/generate"), json=BODY)

def test_second_shares_it(tito_mock, urls):
    assert tito_mock.stats()["received"] == 1
    assert tito_mock.base_url in urls.read()

@pytest.mark.tito_mock(defects=["abort-ignored"])
def test_other_settings_get_their_own(tito_mock, urls):
    assert tito_mock.base_url not in urls.read()
    urls.write(tito_mock.base_url)

def test_a_failing_test_still_tears_down(tito_mock_factory, urls):
    urls.write(tito_mock_factory(itl_ms=1).base_url)
    raise AssertionError("the client under test broke")
"""

CONFTEST = """
import pytest

class Urls:
    def __init__(self, path):
        self.path = path
    def write(self, url):
        with open(self.path, "a") as f:
            f.write(url + "\\n")
    def read(self):
        return open(self.path).read()

@pytest.fixture
def urls(pytestconfig):
    return Urls(pytestconfig.rootpath / "urls.txt")
"""

SESSION_SCOPED = """
def test_{name}(tito_mock_factory, urls):
    urls.write(tito_mock_factory(scope="session", ttft_ms=1).base_url)
"""


def _urls(pytester: pytest.Pytester) -> list[str]:
    return (pytester.path / "urls.txt").read_text().split()


def _refused(url: str) -> bool:
    try:
        httpx.get(url + "/health", timeout=2)
    except httpx.ConnectError:
        return True
    return False


def test_module_scope_is_shared_and_every_mock_is_torn_down(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_client=MODULE_SCOPED)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    urls = _urls(pytester)
    assert len(set(urls)) == 3
    assert all(_refused(url) for url in urls)


def test_session_scope_spans_modules(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_a=SESSION_SCOPED.format(name="a"), test_b=SESSION_SCOPED.format(name="b")
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    first, second = _urls(pytester)
    assert first == second
    assert _refused(first)
