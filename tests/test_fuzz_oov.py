"""How the out-of-vocabulary group tells a crash from a slow answer, against a scripted server:
vLLM 0.32 `--tokens-only` answers the poisoned prompt 500, still answers /health for a moment,
then refuses connections (CI's live-cpu run filed the next prompt as `answer_budget`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.fuzz import oov
from conformance.fuzz.engine import ServerGone


@dataclass
class ScriptedFuzzer:
    """Answers `call` from `answers` (an exception is raised) and `alive` from `health`."""

    answers: list[Any]
    health: list[bool]
    recorded: list[tuple[str, int | None, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)

    def call(self, case: Any) -> Any:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def alive(self) -> bool:
        return self.health.pop(0) if len(self.health) > 1 else self.health[0]

    def judge(self, *args: Any, **kwargs: Any) -> None:
        pass

    def transport_error(self, op: str, group: str, case: Any, exc: Exception, i: int) -> None:
        self.recorded.append(("answer_budget", None, str(exc)))

    def record(self, op: str, label: str, group: str, check: str, status: int | None,
               message: str, curl: str, index: int) -> None:  # fmt: skip
        assert group == oov.GROUP and curl
        self.recorded.append((check, status, message))

    def _base(self) -> str:
        return "http://127.0.0.1:1"


def _case() -> Any:
    return SimpleNamespace(
        body={"token_ids": [2049]},
        operation=SimpleNamespace(label="POST /inference/v1/generate"),
        as_curl_command=lambda **_: "curl -X POST http://127.0.0.1:1/inference/v1/generate",
    )


def test_a_500_then_a_late_death_is_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oov.time, "sleep", lambda s: None)
    fz = ScriptedFuzzer([SimpleNamespace(status_code=500)], health=[True, True, False])
    with pytest.raises(ServerGone):
        oov.send_oov_case(fz, _case(), 1)  # type: ignore[arg-type]
    assert [(c, s) for c, s, _ in fz.recorded] == [("server_survives", 500)]


def test_a_500_from_a_server_that_stays_up_is_not_a_crash() -> None:
    fz = ScriptedFuzzer([SimpleNamespace(status_code=500)], health=[True])
    oov.send_oov_case(fz, _case(), 1)  # type: ignore[arg-type]
    assert fz.recorded == []  # the 500 itself is judged by the checks (not_a_server_error)


def test_a_refused_connection_after_a_crash_is_server_survives_not_answer_budget() -> None:
    refused = ConnectionError("[Errno 111] Connection refused")
    fz = ScriptedFuzzer([refused], health=[False])
    with pytest.raises(ServerGone):
        oov.send_oov_case(fz, _case(), 2)  # type: ignore[arg-type]
    assert [(c, s) for c, s, _ in fz.recorded] == [("server_survives", None)]
    assert "Connection refused" in fz.recorded[0][2]


def test_a_timeout_from_a_live_server_is_a_slow_answer() -> None:
    fz = ScriptedFuzzer([TimeoutError("read timed out")], health=[True])
    with pytest.raises(ServerGone):
        oov.send_oov_case(fz, _case(), 3)  # type: ignore[arg-type]
    assert [c for c, _, _ in fz.recorded] == ["answer_budget"]


def test_the_group_ends_at_the_crash_without_replaying_it() -> None:
    """hypothesis replays a failing example to shrink it: the crash must end the group, not
    fail the test, or the dead server is sent the prompt again (a second, bogus finding)."""
    from tests.test_fuzz_mock import run_profile

    result = run_profile(
        "tokens-only", 5, ("oov-token-500",), operations=("generate",), stateful=False,
        negative=False,
    )  # fmt: skip
    group = [s for s in result.stats if s.group == oov.GROUP]
    assert [s.cases for s in group] == [1] and result.server_gone
    crashes = [f for f in result.findings if f.check == "server_survives"]
    assert [(f.status, f.occurrences) for f in crashes] == [(500, 1)]
    assert all(f.occurrences == 1 for f in result.findings if f.group == oov.GROUP)
