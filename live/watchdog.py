"""A pytest plugin beside the suite's Collector: notices a dead server, restarts it, records.

A server that dies on a check (vLLM 0.32 `--tokens-only` exits on an out-of-vocabulary id) must
fail *that* check and only that one: the watchdog marks the check, restarts the server on the
same port before the next check (if there is one), and the run goes on. It also keeps every
exchange of every check, for the transcripts artifact.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import pytest

from conformance.registry import requirements_of
from conformance.session import Session
from conformance.wire.exchange import Exchange

from .launcher import LiveServer, ServerStartError


@dataclass
class Death:
    check: str
    requirements: tuple[str, ...]
    returncode: int | None
    log_tail: str
    restarted: bool = False
    restart_error: str = ""


@dataclass
class Watchdog:
    server: LiveServer
    session: Session
    deaths: list[Death] = field(default_factory=list)
    transcripts: list[tuple[str, tuple[str, ...], list[Exchange]]] = field(default_factory=list)
    gave_up: bool = False

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        if report.when != "call":
            return
        ids = requirements_of(getattr(item, "function", None))
        name = item.nodeid.rsplit("/", 1)[-1]
        self.transcripts.append((name, ids, list(self.session.client.log)))
        if self._died(failed=report.failed):
            self.deaths.append(Death(name, ids, self.server.returncode, self.server.log_tail()))

    def _died(self, failed: bool) -> bool:
        if not self.server.alive:
            return True
        # A failing check may have just killed it, and a dying server can still answer /health
        # for a moment: only a server that stays healthy is alive.
        return failed and not self.server.stays_healthy()

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Restart lazily, before the next check: a death on the last check costs no restart."""
        if self.deaths and not self.deaths[-1].restarted and not self.gave_up:
            death = self.deaths[-1]
            try:
                self.server.restart()
                death.restarted = True
                self.session.client.forgive_timeouts()  # a fresh server, a fresh count
            except ServerStartError as exc:
                death.restart_error = str(exc)
                self.gave_up = True
        if self.gave_up:
            pytest.fail("the server died and could not be restarted", pytrace=False)

    def culprits(self) -> dict[str, Death]:
        return {d.check: d for d in self.deaths}


def mark_deaths(outcomes: list[tuple[tuple[str, ...], Any]], deaths: dict[str, Death]) -> None:
    """The check during which the server died fails, whatever it asserted."""
    from conformance.verdicts.results import Status

    for _ids, check in outcomes:
        death = deaths.get(check.name)
        if death is None:
            continue
        note = f"the server died during this check (exit code {death.returncode}); " + (
            "restarted for the remaining checks" if death.restarted else "no check ran after it"
        )
        check.status = Status.FAIL
        check.message = f"{check.message}; {note}" if check.message else note
