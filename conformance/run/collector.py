"""The pytest side of a run: hands checks their session, and pytest's reports to the grounds.

A thin adapter: before each check, `grounds.gate.before` decides whether it may judge; after
it, `grounds.verdict.decide` turns what it raised into its result. Nothing here reads a
message or decides a status."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.grounds import gate, verdict
from conformance.registry import needs_of, requirements_of, runs_last
from conformance.session import Session, SuiteConfig
from conformance.verdicts.assemble import report_from
from conformance.verdicts.results import CheckResult

COLLECTOR = pytest.StashKey["Collector"]()
"""Where a session's collector finds itself again: its `tito` fixture is static (pytest 9.2
deprecates session fixtures bound to an instance; pytest 10 refuses them)."""


class Collector:
    """Registered as a pytest plugin object for one run (by the runner or by plugin.py)."""

    def __init__(
        self,
        config: SuiteConfig,
        session: Session | None = None,
        summary: bool = False,
        selection: frozenset[str] | None = None,
    ) -> None:
        self.config = config
        self.session = session
        self.summary = summary
        self._open_error: Exception | None = None
        self.outcomes: list[tuple[tuple[str, ...], CheckResult]] = []
        self._started: dict[str, float] = {}
        self.selected: frozenset[str] | None = selection
        self._selection = selection  # the whole run's, when this session runs only part

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[COLLECTOR] = self

    @pytest.fixture(scope="session")
    @staticmethod
    def tito(request: pytest.FixtureRequest) -> Session:
        """The probed server every check runs against."""
        return request.config.stash[COLLECTOR].open()

    def open(self) -> Session:
        if self._open_error is not None:
            raise self._open_error
        if self.session is None:
            try:
                self.session = Session.open(self.config)
                self.session.selected = self.selected
            except Exception as exc:
                self._open_error = exc
                raise
        return self.session

    def pytest_unconfigure(self) -> None:
        if self.session is not None and self.summary:
            self.session.close()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """In plugin mode, end the pytest output with the suite's own table."""
        if not self.summary:
            return
        from conformance.reporting.terminal import render

        report = report_from(self.config, self.session, self.outcomes)
        terminalreporter.write_line("")
        for line in render([report]).splitlines():
            terminalreporter.write_line(line)

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[Any]) -> None:
        wanted = self.config.requirement_ids
        keep, drop = [], []
        for item in items:
            ids = requirements_of(getattr(item, "function", None))
            if ids and (wanted is None or wanted.intersection(ids)):
                keep.append(item)
            else:
                drop.append(item)
        keep.sort(key=lambda item: runs_last(getattr(item, "function", None)))
        self.selected = self._selection or frozenset(
            rid for item in keep for rid in requirements_of(getattr(item, "function", None))
        )
        if self.session is not None:
            self.session.selected = self.selected
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self._started[item.nodeid] = time.monotonic()
        function = getattr(item, "function", None)
        if requirements_of(function):
            self.open()  # plugin mode opens lazily; a probe error is this check's error
        if self.session is not None:
            self.session.client.log.clear()
            self.session.recent.clear()
            gate.before(self.session, requirements_of(function), needs_of(function))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[None]:
        outcome: Any = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self._record(item, call, report)

    def _record(self, item: pytest.Item, call: pytest.CallInfo[None], report: Any) -> None:
        """Hand what pytest saw to the one place that decides a status (`grounds.verdict`)."""
        started = self._started.get(item.nodeid, time.monotonic())
        raised = call.excinfo.value if call.excinfo is not None else None
        if raised is None and not report.passed:  # failed without an exception (rare)
            raised = RuntimeError(str(report.longrepr))
        ran = verdict.Ran(
            name=item.nodeid.rsplit("/", 1)[-1],
            ids=requirements_of(getattr(item, "function", None)),
            when=report.when,
            raised=raised,
            trace=report.longreprtext if not report.passed else "",
            took=time.monotonic() - started,
        )
        self.outcomes.append((ran.ids, verdict.decide(self.session, ran)))
