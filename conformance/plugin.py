"""pytest plugin: `pytest --tito-base-url URL` runs the conformance checks against a server.

Loaded in every pytest run of any project that installs the kit (pytest11 entry point), so it
imports nothing heavy and does nothing unless `--tito-base-url` is given.
"""

from __future__ import annotations

import pytest

from loopback.timeouts import DEFAULT_TIMEOUT_S


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tito", "TITO conformance suite")
    group.addoption("--tito-base-url", default=None, help="run the TITO checks against this URL")
    group.addoption("--tito-api-key", default=None, help="API key of the server under test")
    group.addoption("--tito-expect", default="", help="comma-separated features the server claims")
    group.addoption(
        "--tito-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help="per-request timeout (s); every other wait follows from it",
    )


def pytest_configure(config: pytest.Config) -> None:
    base_url = config.getoption("--tito-base-url", default=None)
    if not base_url:
        return
    from conformance.run.collector import Collector
    from conformance.run.runner import CHECKS_DIR
    from conformance.session import SuiteConfig

    expect = frozenset(f for f in str(config.getoption("--tito-expect")).split(",") if f)
    suite = SuiteConfig(
        base_url=str(base_url),
        api_key=config.getoption("--tito-api-key"),
        expect=expect,
        timeout=float(config.getoption("--tito-timeout")),
    )
    config.pluginmanager.register(Collector(suite, summary=True), "tito-collector")
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(CHECKS_DIR)]
