"""The pytest side of a run: hands checks their session, turns reports into results."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import pytest

from conformance import api
from conformance.foundations import (
    PACED_GROUND,
    UNREADABLE,
    UNREADABLE_ERRORS,
    broken,
    builds_on,
    implied,
    routed,
)
from conformance.inflight.attempts import Inconclusive, OutOfReach
from conformance.registry import needs_of, requirements_of, runs_last
from conformance.requirements import by_id
from conformance.session import BLOCKED_PREFIX, LIMIT_PREFIX, Session, SuiteConfig
from conformance.verdicts.assemble import report_from
from conformance.verdicts.reproducer import reproducer_for
from conformance.verdicts.results import CheckResult, SkipKind, Status
from conformance.wire import ServerBroke
from conformance.wire.exchange import Exchange, stated_error

SCHEMA_OWNERS = {"GenerateResponse": "SCHEMA-GEN-001", "GenerateStreamPayload": "SCHEMA-STREAM-001"}
"""The requirement that judges every received body of each schema (`checks/test_schema.py`)."""
SCHEMA_JUDGES = frozenset(SCHEMA_OWNERS.values())
MAX_LEAVES = 50
"""Leaves read of a body a failed check read: enough that a field of its own is never missed."""
STREAM_GROUND = "STREAM-001"
"""What every check that reads a stream stands on: a readable SSE stream."""
KEY_GROUND = "ROUTER-010"
"""Behind a router, what every check that sent the key stands on: the key reaches the engine."""
STATUS_GROUND = "ERR-002"
"""What every check that expects a rejection stands on: an error carries its status."""
STATUS_JUDGES = frozenset({STATUS_GROUND, "ROUTER-009"})
"""The requirements that judge an error's status themselves (never blocked on it)."""


class Malformed(NamedTuple):
    """An answer a check read that breaks the spec's schema, at its first leaf."""

    own: bool  # malformed in the fields of the check's own requirements
    schema: str
    what: str
    body: Any
    owner: str  # the SCHEMA-* requirement that judges every body of `schema`
    leaf: str


@dataclass(frozen=True)
class ExchangeGround:
    """A requirement a failed check stands on when one of its exchanges `shows` the symptom."""

    rid: str
    shows: Callable[[Exchange], bool]
    judges: frozenset[str]  # checks of these judge the ground themselves: never blocked on it
    router_only: bool = False  # a router's duty: only where the run knows its engines


EXCHANGE_GROUNDS = (
    # Behind a router, a 401 to a request that sent the key, where the router is shown to keep
    # the key from the engines: one dropped header, one failure (ROUTER-010's).
    ExchangeGround(
        KEY_GROUND,
        lambda e: e.status == 401 and "Authorization" in e.headers,
        frozenset({KEY_GROUND}),
        router_only=True,
    ),
    # A success (or a router's 502) stating an error in its body, where a plainly invalid
    # generate is answered so too: the server rejected and misstated the status (ERR-002's).
    ExchangeGround(
        STATUS_GROUND,
        lambda e: stated_error(e.status, e.response_body) is not None,
        STATUS_JUDGES,
    ),
    # A stream read where a minimal stream is no readable SSE at all: STREAM-001's, not every
    # check that reads streams.
    ExchangeGround(STREAM_GROUND, lambda e: e.stream, frozenset({STREAM_GROUND})),
    # Behind a router, a stream held back until it ends: no action lands in flight on a stream
    # the client sees only whole (ROUTER-008's).
    ExchangeGround(PACED_GROUND, lambda e: e.stream, frozenset({PACED_GROUND}), router_only=True),
)
"""Grounds read from the failed check's own exchanges, in the order they are asked."""


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
            if self.session.overdue:
                raise RuntimeError(
                    f"run deadline of {self.config.deadline_s:g} s exceeded before this check"
                )
            ids = requirements_of(function)
            what = by_id()[ids[0]].title if ids else item.name
            self.session.applies(needs_of(function), what, ids)
            ground = implied(self.session, ids)
            routes = routed(self.session, ids)  # behind a router: the duties it passes through
            builds_on(self.session, *ground, *routes, *needs_of(function).builds_on)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[None]:
        outcome: Any = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self._record(item, call, report)

    def _ground(self, ids: tuple[str, ...], status: bool = False) -> str | None:
        """Why a failed check is blocked instead (None: its failure stands). A wrong `status`
        is the server's choice: no malformed body read before it explains it."""
        return self._exchange_ground(ids) or (None if status else self._malformed_ground(ids))

    def _exchange_ground(self, ids: tuple[str, ...]) -> str | None:
        """The first of `EXCHANGE_GROUNDS` the failed check's exchanges show and whose probe
        shows broken on this server: the check is blocked naming it (never where it judges
        that ground itself, where the ground is not in the run, or, for a router's ground,
        where the run knows no engines)."""
        s = self.session
        if s is None:
            return None
        for ground in EXCHANGE_GROUNDS:
            if set(ids) & ground.judges or (ground.router_only and not s.features.engines):
                continue
            if s.selected is not None and ground.rid not in s.selected:
                continue
            if not any(ground.shows(e) for e in s.client.log):
                continue
            why = broken(s, ground.rid)
            if why is not None and why.startswith(UNREADABLE) and set(ids) & SCHEMA_JUDGES:
                continue  # the ground tripped on the form they judge: they fail, it waits
            if why is not None:
                return f"{BLOCKED_PREFIX} {why} ({ground.rid})"
        return None

    def _malformed_ground(self, ids: tuple[str, ...]) -> str | None:
        """When a failed check read an answer that breaks the spec's schema outside the fields
        its own requirements govern (`Requirement.fields`), the answer's form is what is wrong,
        and the SCHEMA-* requirement that judges every body fails for it at the leaf. The check
        is blocked naming it, not failed: one malformed field fails the requirements about it,
        not each check that tripped on it. (Not where SCHEMA-* is not in the run, and never for
        the SCHEMA-* checks themselves.)"""
        s = self.session
        if s is None or set(ids) & set(SCHEMA_OWNERS.values()):
            return None
        found = self._malformed(ids)
        if found is None or found.own:
            return None  # malformed where the check's own requirement speaks: it fails
        s.malformed.append((found.schema, found.what, found.body))  # judged there, always
        where = f"{found.what}: {found.leaf} ({found.owner})"
        return f"{BLOCKED_PREFIX} it read a malformed answer, {where}"

    def _malformed(self, ids: tuple[str, ...]) -> Malformed | None:
        """The first malformed answer the check read; one malformed in its own requirements'
        fields comes first. None: every answer it read has the spec's form."""
        s = self.session
        if s is None:
            return None
        own = {f for rid in ids for f in by_id()[rid].fields}
        first: Malformed | None = None
        for schema, what, body in s.recent:  # every body it read, before deciding
            owner = SCHEMA_OWNERS.get(schema)
            if owner is None or (s.selected is not None and owner not in s.selected):
                continue
            leaves = api.schema_leaves(schema, body, limit=MAX_LEAVES, every=True)
            mine = [leaf for leaf in leaves if leaf.keys & own]
            if mine:
                return Malformed(True, schema, what, body, owner, mine[0].text)
            if leaves and first is None:
                first = Malformed(False, schema, what, body, owner, leaves[0].text)
        return first

    def _unreadable(self, ids: tuple[str, ...], excinfo: Any) -> str | None:
        """A check that could not read an answer malformed in its own requirement's fields (a
        string where its logprobs belong) fails on that field, as it would have judged it: the
        harness did not break, the answer did."""
        if excinfo is None or not excinfo.errisinstance(UNREADABLE_ERRORS):
            return None
        found = self._malformed(ids)
        if found is None or not found.own:
            return None
        return f"{found.what} could not be read: {found.leaf}"

    def _record(self, item: pytest.Item, call: pytest.CallInfo[None], report: Any) -> None:
        ids = requirements_of(getattr(item, "function", None))
        name = item.nodeid.rsplit("/", 1)[-1]
        took = time.monotonic() - self._started.get(item.nodeid, time.monotonic())
        if report.passed:
            self.outcomes.append((ids, CheckResult(name, Status.PASS, duration_s=took)))
            return
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
            reason = reason.removeprefix("Skipped: ")
            kind = (
                SkipKind.LIMIT
                if reason.startswith(LIMIT_PREFIX)
                else SkipKind.BLOCKED
                if reason.startswith(BLOCKED_PREFIX)
                else SkipKind.ABSENT
            )
            skipped = CheckResult(name, Status.SKIP, reason, duration_s=took, skip_kind=kind)
            self.outcomes.append((ids, skipped))
            return
        excinfo = call.excinfo
        if excinfo is not None and excinfo.errisinstance(OutOfReach):  # never a fail or error
            out_of_reach = CheckResult(
                name, Status.SKIP, str(excinfo.value), duration_s=took, skip_kind=SkipKind.LIMIT
            )
            self.outcomes.append((ids, out_of_reach))
            return
        wrong_status = excinfo is not None and excinfo.errisinstance(api.StatusMismatch)
        ground = self._ground(ids, wrong_status) if report.when == "call" else None
        if ground is not None:
            self.outcomes.append(
                (
                    ids,
                    CheckResult(
                        name, Status.SKIP, ground, duration_s=took, skip_kind=SkipKind.BLOCKED
                    ),
                )
            )
            return
        failure = excinfo is not None and (
            (
                report.when == "call"
                and excinfo.errisinstance((AssertionError, ServerBroke, pytest.fail.Exception))
            )
            or excinfo.errisinstance(pytest.fail.Exception)  # a claimed feature is absent
        )
        unreadable = self._unreadable(ids, excinfo) if report.when == "call" else None
        if unreadable is not None:
            failure, message = True, unreadable
        elif excinfo is None:
            message = str(report.longrepr)
        elif excinfo.errisinstance(pytest.fail.Exception):
            message = str(excinfo.value.msg)  # type: ignore[attr-defined]
        else:
            message = f"{excinfo.typename}: {excinfo.value}" if not failure else str(excinfo.value)
        if excinfo is not None and excinfo.errisinstance(Inconclusive):
            message = f"inconclusive: {excinfo.value}"
        elif not failure and excinfo is not None:
            message = f"harness error: {message}\n{report.longreprtext[-1500:]}"
        log = self.session.client.log if self.session is not None else []
        reproducer = reproducer_for(excinfo.value if excinfo is not None else None, log)
        status = Status.FAIL if failure else Status.ERROR
        if failure and self.session is not None:
            self.session.failing.update(ids)
        inconclusive = excinfo is not None and excinfo.errisinstance(Inconclusive)
        result = CheckResult(
            name, status, message.strip(), reproducer, duration_s=took, inconclusive=inconclusive
        )
        self.outcomes.append((ids, result))
