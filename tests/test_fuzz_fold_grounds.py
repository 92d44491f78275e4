"""The folded-in fuzz is held to the suite's grounds (issue 28, item 5): a fuzz finding whose
evidence is another requirement's fault is shown blocked naming it, never failed beside it.

Reports are built by hand here (no server): the suite's verdicts, then the fuzz's, folded."""

from __future__ import annotations

from conformance.fuzz.merge import merge
from conformance.grounds.verdict import STREAMED
from conformance.requirements import by_id
from conformance.verdicts.results import CheckResult, Report, ServerInfo, SkipKind, Status, decide

FOUND = "Undocumented status code: Received: 502"


def report(results: dict[str, list[CheckResult]], engines: tuple[str, ...] = ()) -> Report:
    server = ServerInfo("http://127.0.0.1:1", None, [], [], "scale-out", engines=list(engines))
    return Report(
        "tito-conformance",
        "0",
        "spec",
        server,
        "2026-01-01T00:00:00+00:00",
        1.0,
        [decide(by_id()[rid], checks) for rid, checks in results.items()],
    )


def passed(name: str = "suite check") -> list[CheckResult]:
    return [CheckResult(name, Status.PASS)]


def failed(message: str = "it broke", name: str = "suite check") -> list[CheckResult]:
    return [CheckResult(name, Status.FAIL, message, "curl -X POST http://x")]


def fuzz_fail(operation: str = "POST /inference/v1/generate", stream: bool = False) -> CheckResult:
    between = STREAMED if stream else " "
    return CheckResult(
        f"fuzz[positive] {operation}{between}status_code_conformance",
        Status.FAIL,
        FOUND,
        streamed=stream,
    )


def folded(suite: Report, fuzzed: dict[str, list[CheckResult]]) -> dict[str, Status]:
    merge(suite, report(fuzzed))
    return {r.requirement.id: r.status for r in suite.requirements}


def test_behind_a_router_that_rewrites_errors_the_error_findings_are_its() -> None:
    engines = ("http://e1", "http://e2")
    suite = report(
        {"ROUTER-009": failed("HTTP 502 through the router"), "ERR-003": passed()}, engines
    )
    got = folded(suite, {"ERR-003": [fuzz_fail()], "ERR-005": [fuzz_fail()]})
    assert got["ROUTER-009"] is Status.FAIL
    assert got["ERR-003"] is Status.PASS  # its suite check passed; the finding is blocked
    assert got["ERR-005"] is Status.SKIP
    blocked = suite.result("ERR-005").checks[0]
    assert blocked.skip_kind is SkipKind.BLOCKED and blocked.blocked_by == "ROUTER-009"
    assert FOUND in blocked.message  # the finding stays shown


def test_without_engines_or_a_failing_duty_the_findings_fail() -> None:
    one_server = report({"ROUTER-009": failed()})  # no engines: no router between
    assert folded(one_server, {"ERR-005": [fuzz_fail()]})["ERR-005"] is Status.FAIL
    sound = report({"ROUTER-009": passed()}, ("http://e1",))
    assert folded(sound, {"ERR-005": [fuzz_fail()]})["ERR-005"] is Status.FAIL


def test_a_finding_is_held_to_its_checks_grounds_and_to_their_blocks() -> None:
    suite = report({"STREAM-001": failed("Content-Type is application/json")})
    assert folded(suite, {"STREAM-002": [fuzz_fail()]})["STREAM-002"] is Status.SKIP  # builds_on
    blocked = CheckResult(
        "t", Status.SKIP, "x", skip_kind=SkipKind.BLOCKED, blocked_by="GEN-RESP-003"
    )
    suite = report({"GEN-RESP-003": failed(), "LOGP-002": [blocked]})
    assert folded(suite, {"LOGP-002": [fuzz_fail()]})["LOGP-002"] is Status.SKIP


def test_a_finding_on_a_stream_stands_on_a_readable_stream() -> None:
    suite = report({"STREAM-001": failed("Content-Type is application/json")})
    got = folded(suite, {"SCHEMA-STREAM-001": [fuzz_fail(stream=True)]})
    assert got["SCHEMA-STREAM-001"] is Status.SKIP
    suite = report({"STREAM-001": failed("Content-Type is application/json")})
    got = folded(suite, {"SCHEMA-STREAM-001": [fuzz_fail(stream=False)]})
    assert got["SCHEMA-STREAM-001"] is Status.FAIL  # not a stream: its own
    suite = report({"STREAM-001": passed()})
    got = folded(suite, {"SCHEMA-STREAM-001": [fuzz_fail(stream=True)]})
    assert got["SCHEMA-STREAM-001"] is Status.FAIL  # the stream is sound: its own


def test_the_fuzz_cannot_hide_a_suite_failure() -> None:
    suite = report({"STREAM-001": failed(), "STREAM-002": failed("its own")})
    assert folded(suite, {"STREAM-002": [fuzz_fail()]})["STREAM-002"] is Status.FAIL


def test_behind_a_router_that_answers_errors_its_own_way_an_error_answer_is_its() -> None:
    """RENDER-001's fuzz finding on a 502 the router made of an engine's 400 (error-502)."""
    render = "POST /inference/v1/completions/render"
    on_502 = CheckResult(
        f"fuzz[negative] {render} status_code_conformance (HTTP 502)", *FAILED, answered=502
    )
    on_200 = CheckResult(
        f"fuzz[positive] {render} response_schema_conformance (HTTP 200)", *FAILED, answered=200
    )
    suite = report({"ROUTER-009": failed()}, ("http://e1",))
    assert folded(suite, {"RENDER-001": [on_502]})["RENDER-001"] is Status.SKIP
    suite = report({"ROUTER-009": failed()}, ("http://e1",))
    assert folded(suite, {"RENDER-001": [on_200]})["RENDER-001"] is Status.FAIL  # its own
    one_server = report({"ROUTER-009": failed()})
    assert folded(one_server, {"RENDER-001": [on_502]})["RENDER-001"] is Status.FAIL


FAILED = (Status.FAIL, FOUND)
