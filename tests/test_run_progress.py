"""Long runs: one overall line over several profiles; progress on a terminal, none in CI logs."""

from __future__ import annotations

import io

import pytest

from conformance.cli import main
from conformance.reporting.progress import Progress

pytest_plugins = ["pytester"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_run_over_several_profiles_ends_with_one_overall_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["run", "--profile", "scale-out", "--profile", "api-key", "--requirement"]
    code = main([*argv, "GEN-RESP-003", "--mock-defect", "usage-miscount"])
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert code == 1
    assert last.startswith("== overall (2 profiles: scale-out, api-key): FAILED in scale-out")
    assert " 2 failed, " in last


def test_progress_is_shown_on_a_terminal_and_not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TITO_PROGRESS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    terminal, log = Terminal(), io.StringIO()
    Progress("[p] ", terminal).update("fuzzing")
    Progress("[p] ", log).update("fuzzing")
    monkeypatch.setenv("CI", "true")
    in_ci = Terminal()
    Progress("[p] ", in_ci).update("fuzzing")
    assert terminal.getvalue() == "\r\x1b[K[p] fuzzing"
    assert log.getvalue() == in_ci.getvalue() == ""
    monkeypatch.setenv("TITO_PROGRESS", "1")
    forced = io.StringIO()
    Progress("", forced).update("x")
    assert forced.getvalue().endswith("x")


def test_progress_names_each_check_group_as_it_starts(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TITO_PROGRESS", "1")
    pytester.makepyfile(test_core="def test_a(): pass", test_abort="def test_b(): pass")
    screen = io.StringIO()
    progress = Progress("[scale-out] checks: ", screen)
    pytester.inline_run("-p", "no:cacheprovider", plugins=[progress])
    shown = [part for part in screen.getvalue().split("\r\x1b[K") if part]
    assert shown == ["[scale-out] checks: abort (1/2)", "[scale-out] checks: core (2/2)"]
